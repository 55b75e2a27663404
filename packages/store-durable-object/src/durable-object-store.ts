import { StoreClosedError, StoreError, type ChargeAllOptions, type Charged, type TimedCharge } from '@rl/core/store';
import {
  chargedEach,
  decode,
  encode,
  holderError,
  WIRE_VERSION,
  WireStore,
  type Verb,
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
export class DurableObjectStore extends WireStore {
  readonly shards: number;
  private readonly namespace: DurableObjectNamespaceLike;
  private readonly name: string;
  /** Each object's id, by number (an id is plain data; the stub is made per call, in the calling request). */
  private readonly ids = new Map<number, unknown>();
  private closed = false;
  private sent = 0;

  constructor(options: DurableObjectStoreOptions) {
    // Not every instance's notices: a control's come back only in the answer to the isolate that made
    // it (no channel reaches the others), so a deny cache on this store remembers nothing: a denial
    // cached in one isolate would outlive a reset, an unban or an override made in another.
    super(OBJECT, false);
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

  /** Fails every later call with `StoreClosedError` (a call under way still answers). */
  close(): void {
    this.closed = true;
    this.forgetListeners();
  }

  /** Sends one call to the object of `key` as one subrequest; resolves to its answer read by `read`. */
  protected async call(key: string, verb: Verb, args: unknown[], read: (value: unknown) => unknown): Promise<unknown> {
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
}
