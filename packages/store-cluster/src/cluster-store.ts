import {
  StoreClosedError,
  StoreError,
  type ChargeAllOptions,
  type Charged,
  type TimedCharge,
  type TimerHandle,
  type Timers,
  unrefTimer,
} from '@rl/core/store';
import { randomUUID } from 'node:crypto';
import { parseClusterStoreOptions, type ClusterStoreOptions } from './cluster-store-options.js';
import { chargedEach, holderError, none } from './answers.js';
import { lateGiveBacks, type WireCall } from './late-answers.js';
import type { WorkerTransport } from './transport.js';
import { WireStore } from './wire-store.js';
import { decode, encode, WIRE_VERSION, type Verb, type WireError } from './wire.js';

export type { ClusterStoreOptions } from './cluster-store-options.js';

/** Who answers, in the errors read from an answer. */
const HOLDER = 'rl cluster holder';

/**
 * How many calls failed at the store's timeout are remembered for their late answers (see
 * `ClusterStore.timedOut`): past it the oldest is forgotten, and what its late answer granted stays
 * (a permit until its lease ends, units until their window does). A holder that answers at all answers
 * within a stall; one that never does would otherwise grow the table without end.
 */
const LATE_CALLS = 4_096;

/** A call sent and not yet answered: how its answer's value is read, and where it goes. */
interface Pending {
  read(value: unknown): unknown;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * The store a worker uses (a `node:cluster` worker, a PM2 instance): every call goes to the process
 * that holds the state (`serveClusterStore`), which answers from its `MemoryStore`, so that every
 * worker shares one limit, each step atomic per key across them. The calls of one turn of the event
 * loop go as one message (at most `maxBatch` calls), answered by one message.
 *
 * Faults are store errors, as a Redis store's are, and the limiter's failure policy answers them: a
 * message that cannot be sent (no channel, a holder away) fails its calls at once; a call the holder
 * does not answer within `timeout` fails then; a holder's refusal fails that call only.
 *
 * `watchResets` hears each key reset, banned, unbanned or overridden by any worker (the holder sends
 * a notice to every worker, to the one that made the change before its answer), and `undefined` when
 * notices may have been missed (the channel connected again).
 *
 * Several stores may share one channel (two `ClusterStore()`s in a worker share its IPC channel):
 * each tags its messages with a random id of its own and reads only the answers to that id.
 */
export class ClusterStore extends WireStore {
  private readonly transport: WorkerTransport;
  private readonly timeoutMs: number;
  private readonly maxBatch: number;
  private readonly timers: Timers;
  /** This store's tag on the channel: the holder answers to it (see the class comment). */
  private readonly tag = randomUUID();
  private readonly pending = new Map<number, Pending>();
  /** Calls failed at the timeout, by id, as they went on the wire: a grant in their late answer is given back. */
  private readonly late = new Map<number, WireCall>();
  /** The calls of this turn, sent as one message at its end. */
  private queued: unknown[][] = [];
  private nextId = 1;
  private closed = false;
  private sent = 0;

  constructor(options: ClusterStoreOptions = {}) {
    super(HOLDER);
    const parsed = parseClusterStoreOptions(options);
    this.transport = parsed.transport;
    this.timeoutMs = parsed.timeoutMs;
    this.maxBatch = parsed.maxBatch;
    this.timers = parsed.timers;
    this.transport.receive((message) => this.received(message));
    this.transport.reconnected?.(() => this.tell(undefined));
    // The calls queued for this turn fail too: they are dropped from its message, never charged.
    this.transport.lost?.(() =>
      this.fail(
        [...this.pending.keys()],
        new StoreError('rl cluster store: the connection to the holder ended before it answered'),
      ),
    );
  }

  /** Messages sent so far (each one turn's calls, at most `maxBatch`): what the batching saves, for tests and the curious. */
  get messagesSent(): number {
    return this.sent;
  }

  /**
   * The charges of one request decided together on the holder, in one step of its event loop:
   * charged in order until an enforced one denies (or would hold past `holdMs`), and then what the
   * earlier ones took given back (`took: 'rolled-back'`) and the later ones not asked.
   */
  chargeAll(charges: readonly TimedCharge[], options: ChargeAllOptions): readonly Promise<Charged>[] {
    const each = charges.map(() => {
      let resolve!: (value: Charged) => void;
      let reject!: (error: unknown) => void;
      const promise = new Promise<Charged>((yes, no) => {
        resolve = yes;
        reject = no;
      });
      return { promise, resolve, reject };
    });
    const wire = charges.map(({ charge, now }) => [this.wireCharge(charge), now ?? null]);
    this.call(charges[0]?.charge.key ?? '', 'chargeAll', [wire, options.holdMs], (value) => {
      chargedEach(
        value,
        charges.map(({ charge }) => charge.algorithm),
        HOLDER,
      ).forEach((answer, i) => (answer instanceof Error ? each[i]!.reject(answer) : each[i]!.resolve(answer)));
      return undefined;
    }).catch((error: unknown) => {
      for (const e of each) e.reject(error);
    });
    return each.map((e) => e.promise);
  }

  /** Fails every call waiting with `StoreClosedError`, and every later one; stops listening. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.transport.close();
    this.queued = [];
    const error = new StoreClosedError();
    for (const pending of this.pending.values()) pending.reject(error);
    this.pending.clear();
    this.late.clear();
    this.transport.waiting?.(false);
    this.forgetListeners();
  }

  /** Queues one call for this turn's message; resolves to its answer read by `read`. */
  protected call(_key: string, verb: Verb, args: unknown[], read: (value: unknown) => unknown): Promise<unknown> {
    if (this.closed) return Promise.reject(new StoreClosedError());
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      if (this.nextId > Number.MAX_SAFE_INTEGER) this.nextId = 1;
      if (this.pending.size === 0) this.transport.waiting?.(true);
      this.pending.set(id, { read, resolve, reject });
      if (this.queued.push([id, verb, ...args]) === 1) setImmediate(this.flush);
      else if (this.queued.length >= this.maxBatch) this.flush();
    });
  }

  /** Sends this turn's calls as one message, with one timer for them all. */
  private readonly flush = (): void => {
    // A call failed before its turn ended (the connection was lost) is not sent.
    const calls = this.queued.filter((call) => this.pending.has(call[0] as number));
    this.queued = [];
    if (calls.length === 0 || this.closed) return;
    const ids = calls.map((call) => call[0] as number);
    this.sent++;
    const timer: TimerHandle = unrefTimer(this.timers.setTimeout(() => this.timedOut(calls), this.timeoutMs));
    // One timer for the message's calls, stopped once the last of them is settled.
    let left = ids.length;
    const settled = (): void => {
      if (--left === 0) this.timers.clearTimeout(timer);
    };
    for (const id of ids) {
      const pending = this.pending.get(id)!;
      const { resolve, reject } = pending;
      pending.resolve = (value) => {
        settled();
        resolve(value);
      };
      pending.reject = (error) => {
        settled();
        reject(error);
      };
    }
    let text: string;
    try {
      text = encode({ rl: WIRE_VERSION, from: this.tag, calls });
    } catch (error) {
      this.fail(
        ids,
        new StoreError(`rl cluster store: a call could not be encoded: ${String(error)}`, { cause: error }),
      );
      return;
    }
    this.transport.send(text, (error) => {
      if (error !== undefined)
        this.fail(
          ids,
          new StoreError(`rl cluster store: could not send to the holder: ${error.message}`, { cause: error }),
        );
    });
  };

  /**
   * The holder did not answer `calls` within the timeout: those still waiting fail, and are remembered
   * (at most {@link LATE_CALLS}) so that what their late answer grants is given back: the caller, told
   * the call failed, gives nothing back itself (a stalled holder left permits held for their whole
   * lease, and the units of requests answered by the failure policy taken).
   */
  private timedOut(calls: readonly WireCall[]): void {
    for (const call of calls) {
      const id = call[0] as number;
      if (!this.pending.has(id)) continue;
      this.late.set(id, call);
      if (this.late.size > LATE_CALLS) this.late.delete(this.late.keys().next().value!);
    }
    this.fail(
      calls.map((call) => call[0] as number),
      new StoreError(
        `rl cluster store: the holder did not answer within ${this.timeoutMs} ms (is serveClusterStore running in the primary, or the holder process up?)`,
      ),
    );
  }

  /** The late answer to call `id`, failed at its timeout: what it granted is given back (see {@link timedOut}). */
  private answeredLate(id: number, ok: unknown, value: unknown): void {
    const call = this.late.get(id);
    if (call === undefined) return;
    this.late.delete(id);
    if (ok !== 1 || this.closed) return;
    for (const back of lateGiveBacks(call, value))
      this.call(back.key, back.verb, back.args, none).catch(() => {
        // Not given back (the holder away again): a permit ends with its lease, units with their window.
      });
  }

  private fail(ids: readonly number[], error: Error): void {
    for (const id of ids) {
      const pending = this.pending.get(id);
      if (pending === undefined) continue;
      this.forget(id);
      pending.reject(error);
    }
  }

  /** Call `id` is settled: no longer waiting (the transport is told when none is). */
  private forget(id: number): void {
    this.pending.delete(id);
    if (this.pending.size === 0) this.transport.waiting?.(false);
  }

  /** A message from the holder: answers to calls, or a notice of a reset. */
  private received(message: unknown): void {
    const m = decode(message);
    if (m === undefined || m.rl !== WIRE_VERSION) return;
    if ('reset' in m) {
      this.tell(typeof m.reset === 'string' ? m.reset : undefined);
      return;
    }
    if (!Array.isArray(m.answers) || m.to !== this.tag) return;
    for (const answer of m.answers as unknown[]) {
      if (!Array.isArray(answer)) continue;
      const [id, ok, value] = answer as [unknown, unknown, unknown];
      if (typeof id !== 'number') continue;
      const pending = this.pending.get(id);
      if (pending === undefined) {
        this.answeredLate(id, ok, value);
        continue;
      }
      this.forget(id);
      if (ok !== 1) {
        pending.reject(holderError(value as WireError, HOLDER));
        continue;
      }
      try {
        pending.resolve(pending.read(value));
      } catch (error) {
        pending.reject(error);
      }
    }
  }
}
