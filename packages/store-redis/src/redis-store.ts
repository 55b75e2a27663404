import {
  ALGORITHM_KINDS,
  InvalidOptionError,
  StoreClosedError,
  StoreError,
  UnsupportedError,
  ceilMs,
  floorUnits,
  makeDecision,
  type Algorithm,
  type AlgorithmKind,
  type ConcurrencyAlgorithm,
  type Decision,
  type Store,
  type StoreCapabilities,
} from '@rl/core';
import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { DEFAULT_BUCKETS, bucketOf, fieldOf, redisKeyBase } from './keys.js';
import { luaScripts, type LuaScript } from './lua-scripts.generated.js';

export interface RedisStoreOptions {
  /**
   * An ioredis client: a `Redis` (standalone, Sentinel) or a `Cluster`. The store defines its scripts
   * on it (`defineCommand`) and never closes it: the client belongs to the caller.
   */
  client: Redis | Cluster;
  /**
   * Prepended to every Redis key (default `'rl:'`). It must not contain `{` or `}`: the store puts the
   * limiter's key in a hash tag of its own.
   */
  prefix?: string;
  /**
   * Bucket hashes per algorithm kind in the compact layout (default 16384; an integer from 1 to 2^24).
   * Fewer buckets take less memory per key when there are few keys; more buckets keep each hash short,
   * which Redis reads faster (a field is found by a scan: about 0.3 µs at 10 fields, 0.8 µs at 120).
   * Redis keeps a hash compact up to `hash-max-listpack-entries` fields (512 by default), so the
   * default stays compact up to about 8 million live keys per kind; raise it beyond. Every process that
   * shares a Redis must use the same value: a different one finds no state.
   */
  buckets?: number;
}


/**
 * Added to every expiry when the caller passes its own `now` (an app clock, not Redis `TIME`): Redis
 * counts a key's TTL on its own clock, so a little slack keeps a caller's clock that runs behind Redis
 * by up to this much (latency, a paused process) from seeing its state expire before it recovered.
 * With Redis `TIME` the TTL and the state share one clock and no slack is needed.
 */
export const EXPLICIT_NOW_EXPIRY_MARGIN_MS = 1000;

/** HORIZON is capped here (about 3 years, in ms) so that twice it stays a valid PEXPIRE argument. */
const MAX_HORIZON_MS = 1e11;

/** Each script's configuration: `algorithm.params` names and the Lua constants they become, in order. */
const PARAMS_BY_KIND: Record<AlgorithmKind, readonly (readonly [param: string, lua: string])[]> = {
  'fixed-window': [['limit', 'LIMIT'], ['windowMs', 'WINDOW'], ['countDenied', 'COUNT_DENIED']],
  'sliding-window-counter': [['limit', 'LIMIT'], ['windowMs', 'WINDOW'], ['countDenied', 'COUNT_DENIED']],
  'sliding-window-log': [['limit', 'LIMIT'], ['windowMs', 'WINDOW'], ['countDenied', 'COUNT_DENIED']],
  'token-bucket': [['capacity', 'CAPACITY'], ['ratePerMs', 'RATE']],
  'leaky-bucket': [['capacity', 'CAPACITY'], ['emissionMs', 'EMISSION'], ['shape', 'SHAPE']],
  concurrency: [['limit', 'LIMIT'], ['leaseMs', 'LEASE_MS']],
};

/**
 * The longest time (ms) a state of the compact layout needs to become the same as no state: how long
 * a bucket is kept alive when a write extends it (twice this). Undefined for the per-key layout.
 */
const HORIZON_BY_KIND: Partial<Record<AlgorithmKind, (p: Readonly<Record<string, unknown>>) => number>> = {
  'fixed-window': (p) => p.windowMs as number,
  'sliding-window-counter': (p) => 2 * (p.windowMs as number),
  'token-bucket': (p) => (p.capacity as number) / (p.ratePerMs as number),
  'leaky-bucket': (p) => (p.capacity as number) * (p.emissionMs as number),
};

/**
 * Appended to the state tag in the names of an algorithm's keys when their layout changed since an
 * earlier version: the sliding log of 0.1.0 (`:swl`) kept its metadata key for every log and read it
 * whenever the log was not empty, so a 0.1.0 process sharing a log with this version would read a
 * stale sum. With new names the two never share a log (during a rolling upgrade each counts its own,
 * as the compact layout's new bucket names do for the other algorithms).
 */
const LAYOUT_REVISION: Partial<Record<AlgorithmKind, string>> = { 'sliding-window-log': '2' };

/** One script per operation: consume, peek, undo; acquire and release for concurrency. */
type Operation = 'c' | 'p' | 'u' | 'a' | 'r';

type ScriptCall = (this: Redis | Cluster, ...args: string[]) => Promise<unknown>;

/** What the store derives once per algorithm object. */
interface AlgorithmPlan {
  readonly script: LuaScript;
  /** The Lua constants of this configuration, put before the script (see prelude.lua). */
  readonly constants: string;
  /** `:<stateTag>` (and the layout revision, see LAYOUT_REVISION): ends the Redis key of a bucket, or of a key in the per-key layout. */
  readonly suffix: string;
  /** Compact layout: the Redis key of each bucket, made on first use. */
  readonly bucketKeys: string[];
  /** The script of each operation, defined on the client on first use. */
  readonly calls: Partial<Record<Operation, ScriptCall>>;
}

/**
 * The Redis store: shared limits for every app instance that uses the same Redis (standalone or
 * Cluster). Each decision is one `EVALSHA` of the Lua port of the algorithm's step (ioredis
 * `defineCommand` sends `EVAL` once after a `SCRIPT FLUSH` or a restart), so it is atomic per key and
 * takes one round trip. Each configuration and operation has its own script with the parameters in
 * its text, so a call sends only the key, the cost and, with an app clock, `now`.
 *
 * - Time: Redis `TIME` unless the limiter passes `now` (a limiter with an explicit `clock`), so app
 *   instances with skewed clocks agree.
 * - Layout: the one-value algorithms (fixed window, sliding counter, token bucket, leaky bucket) keep
 *   each key's state as a field of a bucket hash, `<prefix>{#<bucket>}:<stateTag>` (the bucket in hex,
 *   see {@link bucketOf}; the field is the key, see {@link fieldOf}): 30 to 60 bytes per key instead of
 *   about 150 for a Redis key of its own. A bucket expires after the latest deadline among its fields
 *   (extended to twice the longest time a state can need, so most writes leave its expiry alone), and dead fields are
 *   removed as new ones arrive (see src/lua/compact-write.lua). The sliding log and concurrency leases keep keys of
 *   their own: `<prefix>{<key>}:<stateTag>` (`:swl2` for the log; see {@link redisKeyBase}), each with an expiry no shorter
 *   than the time its state needs to recover. Either way all Redis keys of one limit share a hash tag,
 *   hence a Cluster slot.
 * - Failures: a command error or a lost connection rejects with a {@link StoreError} (cause attached);
 *   the limiter's `timeout` and `onStoreError` decide what happens then. A request that timed out may
 *   still have been counted by Redis.
 *
 * Needs Redis 6.2 or later (`HRANDFIELD`).
 */
export class RedisStore implements Store {
  readonly capabilities: StoreCapabilities = { local: false, algorithms: ALGORITHM_KINDS };
  readonly client: Redis | Cluster;
  readonly prefix: string;
  readonly buckets: number;
  private readonly plans = new WeakMap<Algorithm, AlgorithmPlan>();
  /** Scripts defined on the client, by kind, operation and constants: algorithm objects of one configuration share them. */
  private readonly scripts = new Map<string, ScriptCall>();
  private closed = false;

  constructor(options: RedisStoreOptions) {
    if (options === null || typeof options !== 'object') throw new InvalidOptionError('RedisStore', options, 'an options object');
    for (const name of Object.keys(options)) {
      if (name !== 'client' && name !== 'prefix' && name !== 'buckets') {
        throw new InvalidOptionError(`RedisStore.${name}`, (options as unknown as Record<string, unknown>)[name], 'no such option; RedisStore takes client, prefix, buckets');
      }
    }
    const client = options.client as unknown;
    if (client === null || typeof client !== 'object' || typeof (client as Redis).defineCommand !== 'function') {
      throw new InvalidOptionError('RedisStore.client', client, 'an ioredis client: new Redis(url) or new Cluster(nodes)');
    }
    const prefix = options.prefix ?? 'rl:';
    if (typeof prefix !== 'string' || prefix.includes('{') || prefix.includes('}')) {
      throw new InvalidOptionError('RedisStore.prefix', prefix, 'a string without { or }');
    }
    const buckets = options.buckets ?? DEFAULT_BUCKETS;
    if (!Number.isInteger(buckets) || buckets < 1 || buckets > 2 ** 24) {
      throw new InvalidOptionError('RedisStore.buckets', buckets, 'an integer from 1 to 16777216');
    }
    this.client = client as Redis | Cluster;
    this.prefix = prefix;
    this.buckets = buckets;
  }

  consume(key: string, algorithm: Algorithm, cost: number, now: number | undefined): Promise<Decision> {
    // A concurrency limit is taken with acquire(); here, as in the memory store, it reports its state.
    return this.decide(key, algorithm, algorithm.stateKind === 'leases' ? 'p' : 'c', String(cost), now);
  }

  peek(key: string, algorithm: Algorithm, cost: number, now: number | undefined): Promise<Decision> {
    return this.decide(key, algorithm, 'p', String(cost), now);
  }

  async undo(key: string, algorithm: Algorithm, cost: number, now: number | undefined): Promise<void> {
    // Leases are given back with release(), never undone.
    if (algorithm.stateKind === 'leases') return;
    await this.call(key, algorithm, 'u', String(cost), now);
  }

  async reset(key: string, algorithm: Algorithm): Promise<void> {
    if (this.closed) throw new StoreClosedError();
    const plan = this.plan(algorithm);
    try {
      if (plan.script.compact) await this.client.hdel(this.bucketKey(plan, key), fieldOf(key));
      else await this.client.del(...this.redisKeys(key, algorithm));
    } catch (error) {
      throw storeError('reset', error);
    }
  }

  acquire(key: string, algorithm: ConcurrencyAlgorithm, leaseId: string, now: number | undefined): Promise<Decision> {
    return this.decide(key, algorithm, 'a', leaseId, now);
  }

  /** Gives a permit back; on a closed store it does nothing (as in the memory store: the lease expires by itself). */
  async release(key: string, algorithm: ConcurrencyAlgorithm, leaseId: string): Promise<void> {
    if (this.closed) return;
    await this.call(key, algorithm, 'r', leaseId, undefined);
  }

  /** Marks the store closed (further calls throw `StoreClosedError`). The ioredis client stays open: close it yourself. */
  close(): void {
    this.closed = true;
  }

  /**
   * The Redis keys that hold `key`'s state for this algorithm kind (`key` being the full storage key the
   * limiter passes, prefix included): its bucket hash in the compact layout (the state is the field
   * {@link redisField}), its own keys otherwise. For inspection and tests: `TTL`, `MEMORY USAGE`.
   */
  redisKeys(key: string, algorithm: Algorithm): string[] {
    const plan = this.plan(algorithm);
    if (plan.script.compact) return [this.bucketKey(plan, key)];
    const base = redisKeyBase(this.prefix, key) + plan.suffix;
    return plan.script.numberOfKeys === 2 ? [base, `${base}:sum`] : [base];
  }

  /** The hash field that holds `key`'s state in the compact layout; `undefined` for the sliding log and concurrency. */
  redisField(key: string, algorithm: Algorithm): string | undefined {
    return this.plan(algorithm).script.compact ? fieldOf(key) : undefined;
  }

  private decide(key: string, algorithm: Algorithm, op: Operation, costOrLease: string, now: number | undefined): Promise<Decision> {
    const plan = this.plan(algorithm);
    // One `then` for both outcomes: the reply becomes a decision, a failure a StoreError.
    return this.send(plan, key, op, costOrLease, now).then(
      (reply) => {
        // Five exact doubles: allowed, remaining, ms to the reset, to a retry (read only when denied),
        // of the delay (see prelude.lua); rounded here as @rl/core rounds them.
        const r = reply as Buffer;
        const allowed = r.readDoubleLE(0) === 1;
        return makeDecision(
          allowed,
          algorithm.limit,
          floorUnits(r.readDoubleLE(8)),
          ceilMs(r.readDoubleLE(16)),
          allowed ? 0 : Math.max(1, ceilMs(r.readDoubleLE(24))),
          ceilMs(r.readDoubleLE(32)),
          algorithm.policy,
        );
      },
      (error: unknown) => {
        throw storeError(plan.script.name, error);
      },
    );
  }

  private call(key: string, algorithm: Algorithm, op: Operation, costOrLease: string, now: number | undefined): Promise<unknown> {
    const plan = this.plan(algorithm);
    return this.send(plan, key, op, costOrLease, now).catch((error: unknown) => {
      throw storeError(plan.script.name, error);
    });
  }

  /**
   * One EVALSHA of the operation's script: `KEYS…, [field,] cost or lease id[, now]` (no `now`: Redis
   * TIME). A cost of 1 without `now` is left out: the scripts read an absent cost as 1.
   */
  private send(plan: AlgorithmPlan, key: string, op: Operation, costOrLease: string, now: number | undefined): Promise<unknown> {
    if (this.closed) throw new StoreClosedError();
    const run = plan.calls[op] ?? this.define(plan, op);
    const client = this.client;
    const unitCost = now === undefined && costOrLease === '1' && op !== 'a' && op !== 'r';
    if (plan.script.compact) {
      const bucket = this.bucketKey(plan, key);
      const field = fieldOf(key);
      if (unitCost) return run.call(client, bucket, field);
      return now === undefined ? run.call(client, bucket, field, costOrLease) : run.call(client, bucket, field, costOrLease, String(now));
    }
    const base = redisKeyBase(this.prefix, key) + plan.suffix;
    if (plan.script.numberOfKeys === 2) {
      const sum = `${base}:sum`;
      if (unitCost) return run.call(client, base, sum);
      return now === undefined ? run.call(client, base, sum, costOrLease) : run.call(client, base, sum, costOrLease, String(now));
    }
    return now === undefined ? run.call(client, base, costOrLease) : run.call(client, base, costOrLease, String(now));
  }

  private bucketKey(plan: AlgorithmPlan, key: string): string {
    const bucket = bucketOf(key, this.buckets);
    // `#` and hex: a tag that hashTagOf never gives a storage key (a plain key never starts with `#`, a
    // digest is 44 characters), so a bucket never shares its name with a key of the per-key layout,
    // of this version or of an earlier one.
    return (plan.bucketKeys[bucket] ??= `${this.prefix}{#${bucket.toString(16)}}${plan.suffix}`);
  }

  /** Defines the script of `op` for this configuration on the client (once per client and script text). */
  private define(plan: AlgorithmPlan, op: Operation): ScriptCall {
    const id = `${plan.script.name}\n${op}\n${plan.constants}`;
    let run = this.scripts.get(id);
    if (run === undefined) {
      const lua = `local OP = '${op}'\n${plan.constants}${plan.script.lua}`;
      const name = `rl_${plan.script.name.replace(/-/g, '_')}_${createHash('sha1').update(lua).digest('hex').slice(0, 16)}`;
      const client = this.client as unknown as Record<string, ScriptCall | undefined>;
      if (typeof client[`${name}Buffer`] !== 'function') this.client.defineCommand(name, { numberOfKeys: plan.script.numberOfKeys, lua });
      // The Buffer variant: the decision is binary (see prelude.lua), read without decoding it as text.
      run = client[`${name}Buffer`]!;
      this.scripts.set(id, run);
    }
    plan.calls[op] = run;
    return run;
  }

  private plan(algorithm: Algorithm): AlgorithmPlan {
    let plan = this.plans.get(algorithm);
    if (plan !== undefined) return plan;
    const params = PARAMS_BY_KIND[algorithm.kind];
    if (params === undefined) throw new UnsupportedError(`RedisStore does not support the ${String(algorithm.kind)} algorithm.`);
    const values = params.map(([name]) => {
      const value = algorithm.params[name];
      if (typeof value !== 'number' || !Number.isFinite(value)) {
        throw new UnsupportedError(`RedisStore: the ${algorithm.kind} algorithm has no numeric parameter ${name} (got ${String(value)}).`);
      }
      // The shortest text that reads back as the same double, in a form Lua's number literals accept.
      return String(value);
    });
    const horizon = HORIZON_BY_KIND[algorithm.kind]?.(algorithm.params);
    const constants =
      `local EXPLICIT_NOW_MARGIN_MS = ${EXPLICIT_NOW_EXPIRY_MARGIN_MS}\n` +
      `local ${params.map(([, lua]) => lua).join(', ')} = ${values.join(', ')}\n` +
      (horizon === undefined ? '' : `local HORIZON = ${String(Math.min(horizon, MAX_HORIZON_MS))}\n`);
    plan = { script: luaScripts[algorithm.kind], constants, suffix: `:${algorithm.stateTag}${LAYOUT_REVISION[algorithm.kind] ?? ''}`, bucketKeys: [], calls: {} };
    this.plans.set(algorithm, plan);
    return plan;
  }
}

function storeError(operation: string, error: unknown): StoreError {
  if (error instanceof StoreError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new StoreError(`Redis ${operation} failed: ${message}`, { cause: error });
}
