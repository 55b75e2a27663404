import { MEMORY_STORE_CAPABILITIES } from '@rl/store-memory';
import {
  StoreClosedError,
  StoreError,
  type Algorithm,
  type Charge,
  type ChargeAllOptions,
  type Charged,
  type ConcurrencyAlgorithm,
  type Decision,
  type GiveBack,
  type Settlement,
  type Store,
  type StoreCapabilities,
  type StoredOverride,
  type TimedCharge,
} from '@rl/core/store';
import {
  AlgorithmCache,
  charged,
  chargedEach,
  decision,
  decode,
  encode,
  holderError,
  none,
  wireAlgorithm,
  WIRE_VERSION,
  type Verb,
  type WireAlgorithm,
  type WireError,
} from '@rl/store-cluster/remote';
import {
  parseDurableObjectStoreOptions,
  type DurableObjectNamespaceLike,
  type DurableObjectStoreOptions,
} from './durable-object-store-options.js';
import { answerLines, WIRE_CONTENT_TYPE, WIRE_URL } from './protocol.js';
import { shardOf } from './shards.js';

export type { DurableObjectNamespaceLike, DurableObjectStoreOptions } from './durable-object-store-options.js';

/** Who answers, in the errors read from an answer. */
const OBJECT = 'rl durable object';

/**
 * The store of a Cloudflare Worker (or anything holding a Durable Object binding): every call goes to
 * a `RateLimitObject`, which decides it on its memory store, so that every isolate of every Worker
 * bound to the namespace shares one limit, each step atomic per key. Each call is one subrequest (a
 * `stub.fetch`), and a request's limits (`chargeAll`) go together in one when their keys are on one
 * object (always with one shard; with more, when they share a hash tag). Nothing is batched across
 * requests: a Worker's subrequest belongs to the request that made it.
 *
 * Faults are store errors, as a Redis store's are, and the limiter's failure policy answers them: a
 * subrequest that fails, an answer that is not 200, a malformed answer; the object's refusal of one
 * call fails that call only.
 */
export class DurableObjectStore implements Store {
  /** What the object's memory store runs; `local: false`, so the limiter applies its timeout and deny cache. */
  readonly capabilities: StoreCapabilities = { ...MEMORY_STORE_CAPABILITIES, local: false };
  readonly shards: number;
  private readonly namespace: DurableObjectNamespaceLike;
  private readonly name: string;
  /** Each object's id, by number (an id is plain data; the stub is made per call, in the calling request). */
  private readonly ids = new Map<number, unknown>();
  /** The wire form of each algorithm seen (made once per algorithm object). */
  private readonly wired = new WeakMap<Algorithm, WireAlgorithm>();
  /** Algorithms made again from the object's answers (an override read back). */
  private readonly algorithms = new AlgorithmCache();
  private readonly listeners = new Set<WeakRef<(storageKey: string | undefined) => void>>();
  private closed = false;
  private sent = 0;

  constructor(options: DurableObjectStoreOptions) {
    const parsed = parseDurableObjectStoreOptions(options);
    this.namespace = parsed.namespace;
    this.shards = parsed.shards;
    this.name = parsed.name;
  }

  /** Subrequests made so far (one per call; a request's grouped limits on one object are one call). */
  get subrequests(): number {
    return this.sent;
  }

  /** The name of the object that decides `key` (see shards.ts). */
  objectName(key: string): string {
    return `${this.name}:${shardOf(key, this.shards)}`;
  }

  charge(charge: Charge, now: number | undefined): Promise<Charged> {
    return this.call(charge.key, 'charge', [this.wireCharge(charge), now ?? null], (value) =>
      charged(value, charge.algorithm, OBJECT),
    ) as Promise<Charged>;
  }

  /**
   * A request's charges decided together by their object, in one step: charged in order until an
   * enforced one denies (or would hold past `holdMs`), then what the earlier ones took given back
   * (`took: 'rolled-back'`) and the later ones not asked. Charges on several objects (keys of other
   * hash tags, `shards` > 1) go as one call per object, each decided so on its own.
   */
  chargeAll(charges: readonly TimedCharge[], options: ChargeAllOptions): readonly Promise<Charged>[] {
    const byObject = new Map<string, number[]>();
    charges.forEach(({ charge }, i) => {
      const name = this.objectName(charge.key);
      const group = byObject.get(name);
      if (group === undefined) byObject.set(name, [i]);
      else group.push(i);
    });
    const answers: Promise<Charged>[] = new Array(charges.length);
    for (const group of byObject.values()) {
      const all = this.call(
        charges[group[0]!]!.charge.key,
        'chargeAll',
        [group.map((i) => [this.wireCharge(charges[i]!.charge), charges[i]!.now ?? null]), options.holdMs],
        (value) =>
          chargedEach(
            value,
            group.map((i) => charges[i]!.charge.algorithm),
            OBJECT,
          ),
      ) as Promise<(Charged | Error)[]>;
      group.forEach((i, j) => {
        answers[i] = all.then((each) => {
          const answer = each[j]!;
          if (answer instanceof Error) throw answer;
          return answer;
        });
      });
    }
    return answers;
  }

  peek(key: string, algorithm: Algorithm, cost: number, now: number | undefined): Promise<Decision> {
    return this.call(key, 'peek', [key, this.wire(algorithm), cost, now ?? null], (value) =>
      decision(value, algorithm, OBJECT),
    ) as Promise<Decision>;
  }

  giveBack(back: GiveBack, now: number | undefined): Promise<void> {
    return this.call(
      back.key,
      'giveBack',
      [{ ...back, algorithm: this.wire(back.algorithm) }, now ?? null],
      none,
    ) as Promise<void>;
  }

  settle(key: string, algorithm: Algorithm, settlement: Settlement, now: number | undefined): Promise<void> {
    return this.call(key, 'settle', [key, this.wire(algorithm), settlement, now ?? null], none) as Promise<void>;
  }

  ban(key: string, algorithm: Algorithm, durationMs: number, now: number | undefined): Promise<void> {
    return this.call(key, 'ban', [key, this.wire(algorithm), durationMs, now ?? null], none) as Promise<void>;
  }

  unban(key: string, algorithm: Algorithm): Promise<void> {
    return this.call(key, 'unban', [key, this.wire(algorithm)], none) as Promise<void>;
  }

  setOverride(key: string, override: Algorithm, ttlMs: number, now: number | undefined): Promise<void> {
    return this.call(key, 'setOverride', [key, this.wire(override), ttlMs, now ?? null], none) as Promise<void>;
  }

  getOverride(key: string, algorithm: Algorithm, now: number | undefined): Promise<StoredOverride | undefined> {
    return this.call(key, 'getOverride', [key, this.wire(algorithm), now ?? null], (value) => {
      if (value === null) return undefined;
      const { algorithm: wire, expiresAt } = value as { algorithm: unknown; expiresAt: number };
      return { algorithm: this.algorithms.algorithm(wire, 'override'), expiresAt };
    }) as Promise<StoredOverride | undefined>;
  }

  clearOverride(key: string, algorithm: Algorithm): Promise<void> {
    return this.call(key, 'clearOverride', [key, this.wire(algorithm)], none) as Promise<void>;
  }

  reset(key: string, algorithm: Algorithm): Promise<void> {
    return this.call(key, 'reset', [key, this.wire(algorithm)], none) as Promise<void>;
  }

  acquire(key: string, algorithm: ConcurrencyAlgorithm, leaseId: string, now: number | undefined): Promise<Decision> {
    return this.call(key, 'acquire', [key, this.wire(algorithm), leaseId, now ?? null], (value) =>
      decision(value, algorithm, OBJECT),
    ) as Promise<Decision>;
  }

  release(key: string, algorithm: ConcurrencyAlgorithm, leaseId: string): Promise<void> {
    return this.call(key, 'release', [key, this.wire(algorithm), leaseId], none) as Promise<void>;
  }

  /**
   * Tells `listener` each key this store reset, banned, unbanned or overridden (the object's notice
   * comes back in the answer of the call that did it). Changes made through another isolate are not
   * told here: that isolate's limiters hear them, and this one's deny cache forgets a denial at its
   * expiry. Held weakly.
   */
  watchResets(listener: (storageKey: string | undefined) => void): void {
    this.listeners.add(new WeakRef(listener));
  }

  /** Fails every later call with `StoreClosedError` (a call under way still answers). */
  close(): void {
    this.closed = true;
    this.listeners.clear();
  }

  private wire(algorithm: Algorithm): WireAlgorithm {
    let wire = this.wired.get(algorithm);
    if (wire === undefined) {
      wire = wireAlgorithm(algorithm);
      this.wired.set(algorithm, wire);
    }
    return wire;
  }

  private wireCharge(charge: Charge): unknown {
    return { ...charge, algorithm: this.wire(charge.algorithm) };
  }

  /** Sends one call to the object of `key` as one subrequest; resolves to its answer read by `read`. */
  private async call(key: string, verb: Verb, args: unknown[], read: (value: unknown) => unknown): Promise<unknown> {
    if (this.closed) throw new StoreClosedError();
    const number = shardOf(key, this.shards);
    let id = this.ids.get(number);
    if (id === undefined) {
      id = this.namespace.idFromName(`${this.name}:${number}`);
      this.ids.set(number, id);
    }
    const body = encode({ rl: WIRE_VERSION, calls: [[1, verb, ...args]] });
    this.sent++;
    let response: Response;
    let text: string;
    try {
      response = await this.namespace
        .get(id as never)
        .fetch(WIRE_URL, { method: 'POST', headers: { 'content-type': WIRE_CONTENT_TYPE }, body });
      text = await response.text();
    } catch (error) {
      throw new StoreError(
        `${OBJECT}: the subrequest failed: ${error instanceof Error ? error.message : String(error)}`,
        {
          cause: error,
        },
      );
    }
    if (response.status !== 200) throw new StoreError(`${OBJECT} answered ${response.status}: ${text.slice(0, 500)}`);
    let answer: unknown[] | undefined;
    for (const line of answerLines(text)) {
      const m = decode(line);
      if (m === undefined || m.rl !== WIRE_VERSION) continue;
      if ('reset' in m) this.tell(typeof m.reset === 'string' ? m.reset : undefined);
      else if (Array.isArray(m.answers))
        answer = (m.answers as unknown[]).find((a) => Array.isArray(a) && a[0] === 1) as unknown[] | undefined;
    }
    if (answer === undefined) throw new StoreError(`${OBJECT} sent no answer: ${text.slice(0, 500)}`);
    if (answer[1] !== 1) throw holderError(answer[2] as WireError, OBJECT);
    return read(answer[2]);
  }

  private tell(storageKey: string | undefined): void {
    for (const ref of this.listeners) {
      const listener = ref.deref();
      if (listener === undefined) this.listeners.delete(ref);
      else listener(storageKey);
    }
  }
}
