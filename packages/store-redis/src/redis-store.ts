import {
  InvalidOptionError,
  StoreClosedError,
  StoreError,
  UnsupportedError,
  makeDecision,
  type Algorithm,
  type AlgorithmKind,
  type ConcurrencyAlgorithm,
  type Decision,
  type Store,
  type StoreCapabilities,
} from '@rl/core';
import type { Cluster, Redis } from 'ioredis';
import { redisKeyBase } from './keys.js';
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
}

const ALL_KINDS: readonly AlgorithmKind[] = [
  'fixed-window',
  'sliding-window-log',
  'sliding-window-counter',
  'token-bucket',
  'leaky-bucket',
  'concurrency',
];

/**
 * Added to every expiry when the caller passes its own `now` (an app clock, not Redis `TIME`): Redis
 * counts a key's TTL on its own clock, so a little slack keeps a caller's clock that runs behind Redis
 * by up to this much (latency, a paused process) from seeing its state expire before it recovered.
 * With Redis `TIME` the TTL and the state share one clock and no slack is needed.
 */
export const EXPLICIT_NOW_EXPIRY_MARGIN_MS = 1000;

/** The parameters each script takes after the common ones, in order, from `algorithm.params`. */
const PARAMS_BY_KIND: Record<AlgorithmKind, readonly string[]> = {
  'fixed-window': ['limit', 'windowMs', 'countDenied'],
  'sliding-window-counter': ['limit', 'windowMs', 'countDenied'],
  'sliding-window-log': ['limit', 'windowMs', 'countDenied'],
  'token-bucket': ['capacity', 'ratePerMs'],
  'leaky-bucket': ['capacity', 'emissionMs', 'shape'],
  concurrency: ['limit', 'leaseMs'],
};

type ScriptCall = (...args: string[]) => Promise<unknown>;

/** What the store derives once per algorithm object: the script and its parameter arguments. */
interface AlgorithmPlan {
  readonly script: LuaScript;
  readonly command: string;
  /** Parameters as text; `String(number)` is the shortest text that parses back to the same double. */
  readonly params: readonly string[];
  /** Suffixes of the algorithm's Redis keys after the hash tag (`:<stateTag>`, and `:<stateTag>:sum` for the log). */
  readonly suffixes: readonly string[];
}

type Operation = 'c' | 'p' | 'u';

/**
 * The Redis store: shared limits for every app instance that uses the same Redis (standalone or
 * Cluster). Each decision is one `EVALSHA` of the Lua port of the algorithm's step (ioredis
 * `defineCommand` sends `EVAL` once after a `SCRIPT FLUSH` or a restart), so it is atomic per key and
 * takes one round trip.
 *
 * - Time: Redis `TIME` unless the limiter passes `now` (a limiter with an explicit `clock`), so app
 *   instances with skewed clocks agree.
 * - Keys: `<prefix>{<key>}:<stateTag>` (see {@link redisKeyBase}); every key written gets an expiry no
 *   shorter than the time its state needs to recover, set in the same script as the write.
 * - Failures: a command error or a lost connection rejects with a {@link StoreError} (cause attached);
 *   the limiter's `timeout` and `onStoreError` decide what happens then. A request that timed out may
 *   still have been counted by Redis.
 */
export class RedisStore implements Store {
  readonly capabilities: StoreCapabilities = { local: false, algorithms: ALL_KINDS };
  readonly client: Redis | Cluster;
  readonly prefix: string;
  private readonly plans = new WeakMap<Algorithm, AlgorithmPlan>();
  private closed = false;

  constructor(options: RedisStoreOptions) {
    if (options === null || typeof options !== 'object') throw new InvalidOptionError('RedisStore', options, 'an options object');
    for (const name of Object.keys(options)) {
      if (name !== 'client' && name !== 'prefix') {
        throw new InvalidOptionError(`RedisStore.${name}`, (options as unknown as Record<string, unknown>)[name], 'no such option; RedisStore takes client, prefix');
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
    this.client = client as Redis | Cluster;
    this.prefix = prefix;
    for (const script of Object.values(luaScripts)) {
      this.client.defineCommand(commandName(script), { numberOfKeys: script.numberOfKeys, lua: script.lua });
    }
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
    const keys = this.redisKeys(key, algorithm);
    try {
      await this.client.del(...keys);
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
   * limiter passes, prefix included). For inspection and tests: `TTL`, `MEMORY USAGE`, `DEL`.
   */
  redisKeys(key: string, algorithm: Algorithm): string[] {
    const base = redisKeyBase(this.prefix, key);
    return this.plan(algorithm).suffixes.map((suffix) => base + suffix);
  }

  private decide(key: string, algorithm: Algorithm, op: Operation | 'a', costOrLease: string, now: number | undefined): Promise<Decision> {
    const plan = this.plan(algorithm);
    // One `then` for both outcomes: the reply becomes a decision, a failure a StoreError.
    return this.send(plan, key, op, costOrLease, now).then(
      (reply) => {
        const r = reply as number[];
        return makeDecision(r[0] === 1, algorithm.limit, r[1]!, r[2]!, r[3]!, r[4]!, algorithm.policy);
      },
      (error: unknown) => {
        throw storeError(plan.script.name, error);
      },
    );
  }

  private call(key: string, algorithm: Algorithm, op: Operation | 'r', costOrLease: string, now: number | undefined): Promise<unknown> {
    const plan = this.plan(algorithm);
    return this.send(plan, key, op, costOrLease, now).catch((error: unknown) => {
      throw storeError(plan.script.name, error);
    });
  }

  /** One EVALSHA: `KEYS…, operation, now ('' for Redis TIME), cost or lease id, expiry margin, params…`. */
  private send(plan: AlgorithmPlan, key: string, op: Operation | 'a' | 'r', costOrLease: string, now: number | undefined): Promise<unknown> {
    if (this.closed) throw new StoreClosedError();
    const base = redisKeyBase(this.prefix, key);
    const args: string[] = [];
    for (const suffix of plan.suffixes) args.push(base + suffix);
    args.push(op, now === undefined ? '' : String(now), costOrLease, now === undefined ? '0' : MARGIN_TEXT);
    for (const param of plan.params) args.push(param);
    const run = (this.client as unknown as Record<string, ScriptCall>)[plan.command]!;
    return run.apply(this.client, args);
  }

  private plan(algorithm: Algorithm): AlgorithmPlan {
    let plan = this.plans.get(algorithm);
    if (plan !== undefined) return plan;
    const names = PARAMS_BY_KIND[algorithm.kind];
    if (names === undefined) throw new UnsupportedError(`RedisStore does not support the ${String(algorithm.kind)} algorithm.`);
    const script = luaScripts[algorithm.kind];
    const params = names.map((name) => {
      const value = algorithm.params[name];
      if (typeof value !== 'number' || !Number.isFinite(value)) {
        throw new UnsupportedError(`RedisStore: the ${algorithm.kind} algorithm has no numeric parameter ${name} (got ${String(value)}).`);
      }
      return String(value);
    });
    const tag = `:${algorithm.stateTag}`;
    plan = { script, command: commandName(script), params, suffixes: script.numberOfKeys === 2 ? [tag, `${tag}:sum`] : [tag] };
    this.plans.set(algorithm, plan);
    return plan;
  }
}

const MARGIN_TEXT = String(EXPLICIT_NOW_EXPIRY_MARGIN_MS);

/** The ioredis command name of a script: versioned by its SHA1, so two versions of the package never clash on one client. */
function commandName(script: LuaScript): string {
  return `rl_${script.name.replace(/-/g, '_')}_${script.sha1.slice(0, 10)}`;
}

function storeError(operation: string, error: unknown): StoreError {
  if (error instanceof StoreError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new StoreError(`Redis ${operation} failed: ${message}`, { cause: error });
}
