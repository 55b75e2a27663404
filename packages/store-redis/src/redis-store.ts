import {
  InvalidOptionError,
  StoreClosedError,
  StoreError,
  type Algorithm,
  type Decision,
  type Store,
  type StoreCapabilities,
} from '@rl/core';
import { ALGORITHM_KINDS, BLOCK_KEY_SUFFIX, decisionFromExact, type ConcurrencyAlgorithm } from '@rl/core/store';
import calculateSlot from 'cluster-key-slot';
import { createHash } from 'node:crypto';
import { Batcher } from './batcher.js';
import { adaptClient, type ClientAdapter, type RedisClient } from './clients/client.js';
import { DEFAULT_BUCKETS, bucketOf, fieldOf, redisKeyBase } from './keys.js';
import type { LuaScript } from './lua-scripts.generated.js';
import {
  INLINE_CONFIGURATIONS,
  argumentDeclarations,
  inlineDeclarations,
  planScript,
  type Operation,
  type ScriptCall,
  type ScriptCalls,
  type ScriptPlan,
} from './script-plan.js';

export interface RedisStoreOptions {
  /**
   * The Redis client, detected by its methods (see the README's "Clients"): ioredis 5 or 6 or iovalkey
   * (a `Redis`, standalone or Sentinel, or a `Cluster`), or node-redis 4 or later, connected
   * (`createClient`, `createCluster`; from 5 on `createClientPool`). The store never
   * opens or closes it: the client belongs to the caller. Anything else throws `InvalidOptionError`.
   *
   * ioredis: the store defines its scripts on it (`defineCommand`). node-redis: the store sends
   * `EVALSHA` and, on `NOSCRIPT`, `EVAL`; on a Cluster it retries `TRYAGAIN` itself (every 2 ms, 20
   * times at most), which node-redis does not, and node-redis follows `ASK` and `MOVED`. What follows
   * is about ioredis's Cluster options.
   *
   * A Cluster client's retries should end within the limiter's `timeout` (default 50 ms): while a slot
   * migrates, Redis answers `TRYAGAIN` to a script whose keys are split between the two nodes (a
   * sliding log and its `:sum` are moved one by one), `ASK` for a key already moved and `MOVED` once
   * the slot has moved. ioredis follows `ASK` at once, retries `MOVED` after `retryDelayOnMoved`
   * (default 0) and `TRYAGAIN` after `retryDelayOnTryAgain` (default 100 ms, twice the default
   * timeout), at most `maxRedirections` times (default 16) in all, then rejects. For a 50 ms timeout,
   * `new Cluster(nodes, { retryDelayOnTryAgain: 2, maxRedirections: 20 })` keeps retrying for about
   * 40 ms. A call still retried when the timeout ends is answered by the limiter's failure policy;
   * if Redis runs it later and it takes units, the limiter gives them back (`undo`), as for any call
   * answered after its timeout. A rejected call ran nothing.
   *
   * The client's `keyPrefix` is put before every key: on a Cluster it must not start a hash tag that
   * is empty (`{}`), which would make Redis hash each whole key and split a limit's keys over slots.
   */
  client: RedisClient;
  /**
   * Prepended to every Redis key (default `'rl:'`). It must not contain `{` or `}`: the store puts the
   * limiter's key in a hash tag of its own.
   */
  prefix?: string;
  /**
   * Bucket hashes per algorithm kind in the compact layout (default 16384; an integer from 1 to 2^24).
   * Fewer buckets take less memory per key when there are few keys; more buckets keep each hash short,
   * which Redis reads faster (a field of a compact hash is found by a scan, which grows with the hash).
   * Redis keeps a hash compact up to `hash-max-listpack-entries` fields (512 by default), so the
   * default stays compact up to about 8 million live keys per kind; raise it beyond. Every process that
   * shares a Redis must use the same value: a different one finds no state.
   */
  buckets?: number;
  /**
   * Several decisions in one script call (default on, at most 16 decisions per call). The first
   * decision of a configuration (and on a Cluster, of a slot) in a turn of the event loop is sent at
   * once, alone; the next ones issued in the same turn (requests that arrived together, the
   * `Promise.all` of a caller) wait for the end of the turn's I/O phase (`setImmediate`, never a timer)
   * and go as one call that runs them in the order issued, each atomic and each answered as it would
   * have been alone. It takes a process past the client's ceiling of single calls and costs Redis less
   * per decision; a decision in a batch can wait for the ones before it in the same call (the batch's
   * latency is its sum). `false` sends every decision alone; `{ maxSize }` (an integer from 2 to 1000)
   * sets the most decisions per call. See the README's "Batching".
   */
  batch?: boolean | { maxSize?: number };
}

/** Decisions per batch call unless `batch.maxSize` says otherwise. */
export const DEFAULT_BATCH_SIZE = 16;


/** The lease id of a peek at a lease limit: none (no lease is ever named so), as in the memory store. */
const NO_LEASE = '';

/**
 * The Redis store: shared limits for every app instance that uses the same Redis (standalone or
 * Cluster). Each decision is one `EVALSHA` of the Lua port of the algorithm's step (`EVAL` after a
 * `SCRIPT FLUSH` or a restart: sent by ioredis's `defineCommand`, by the store for node-redis; see
 * src/clients/), so it is atomic per key and takes one round trip; or, issued in the same turn of the
 * event loop as others of its configuration, a share of one batch call ({@link Batcher}), which runs
 * each decision as that script would. The first {@link INLINE_CONFIGURATIONS} distinct configurations (an algorithm's
 * script and numbers) each have a script per operation with the parameters in its text, so a call
 * sends only the key, the cost and, with an app clock, `now`; every further configuration is sent by
 * argument to one script per script name and operation, so any number of configurations (quotas built
 * per request) keeps Redis's script cache and the store's tables bounded. Both give the same decisions.
 *
 * - Time: Redis `TIME` unless the limiter passes `now` (a limiter with an explicit `clock`), so app
 *   instances with skewed clocks agree.
 * - Layout: the store learns it from the algorithm's `script` description, and names no algorithm.
 *   In the compact layout each key's state is a field of a bucket hash, `<prefix>{#<bucket>}:<stateTag>`
 *   (the bucket in hex, see {@link bucketOf}; the field is the key, see {@link fieldOf}): a fraction of
 *   the memory of a Redis key of its own. A bucket expires after the latest deadline among its fields
 *   (extended to twice the longest time a state can need, so most writes leave its expiry alone), and
 *   dead fields are removed as new ones arrive (see src/lua/compact-write.lua). Otherwise the state
 *   has keys of its own: `<prefix>{<key>}:<stateTag>` (see {@link redisKeyBase}), then the layout
 *   revision when above 1 and each key's suffix, each with an expiry no shorter than the time its state
 *   needs to recover. Either way all Redis keys of one limit share a hash tag, hence a Cluster slot.
 * - Failures: a command error or a lost connection rejects with a {@link StoreError} (cause attached);
 *   the limiter's `timeout` and `onStoreError` decide what happens then. A request that timed out may
 *   still have been counted by Redis. On a Cluster each key's failure domain is the master that serves
 *   its slot ({@link RedisStore.failureDomain}): a failed master opens the limiter's circuit for its own
 *   keys only, the other masters keep answering.
 *
 * Needs Redis 6.2 or later (`HRANDFIELD`).
 */
export class RedisStore implements Store {
  readonly capabilities: StoreCapabilities = { local: false, algorithms: ALGORITHM_KINDS, blocks: true, reservations: true };
  /** The client given, as given. */
  readonly client: RedisClient;
  readonly prefix: string;
  readonly buckets: number;
  /** A plan per algorithm object, collected with it. */
  private readonly plans = new WeakMap<Algorithm, ScriptPlan>();
  /** The scripts of each configuration sent inline, by configuration id (see `planScript`): at most `inlineLimit` entries, kept for the store's life. */
  private readonly inline = new Map<string, ScriptCalls>();
  /** How many configurations go inline: {@link INLINE_CONFIGURATIONS} (the store's tests set it with {@link setInlineConfigurations}). */
  private inlineLimit = INLINE_CONFIGURATIONS;
  /** The scripts of the configurations sent by argument, by script and state size: one entry per layout of a script. */
  private readonly byArgument = new Map<LuaScript, Map<number, ScriptCalls>>();
  /** Compact layout: the Redis key of each bucket, by suffix (one array per state tag and revision). */
  private readonly bucketKeysBySuffix = new Map<string, string[]>();
  private definedScripts = 0;
  private closed = false;
  /**
   * On a Cluster client only: the master that serves `key`'s slot for this algorithm (`"host:port"`,
   * from the client's slot table; `''` until the client has one), the unit that fails together (see
   * `Store.failureDomain`). After a failover, once the client has refreshed its slot table (on its
   * own, on a `MOVED`, or by ioredis `refreshSlotsCache()`), the slot names the promoted replica, whose
   * circuit is closed. A standalone client (or a node-redis pool) has no such method: the whole store
   * is one domain.
   */
  readonly failureDomain?: (key: string, algorithm: Algorithm) => string;
  /** What the store calls on the client, whatever its family (src/clients/). */
  private readonly adapter: ClientAdapter;
  /** The client's `keyPrefix` (as text), which Cluster slots are computed with. */
  private readonly keyPrefix: string;
  /** Puts the decisions of a turn into batch calls; absent with `batch: false`. */
  private readonly batcher: Batcher | undefined;
  /** Compact layout, on a Cluster: each bucket's slot, by bucket number, computed on first use. */
  private readonly bucketSlots: number[] = [];

  constructor(options: RedisStoreOptions) {
    if (options === null || typeof options !== 'object' || Array.isArray(options)) throw new InvalidOptionError('RedisStore', options, 'an options object');
    for (const name of Object.keys(options)) {
      if (name !== 'client' && name !== 'prefix' && name !== 'buckets' && name !== 'batch') {
        throw new InvalidOptionError(`RedisStore.${name}`, (options as unknown as Record<string, unknown>)[name], 'no such option; RedisStore takes client, prefix, buckets, batch');
      }
    }
    const adapter = adaptClient(options.client as unknown);
    // `undefined` is the only "not given": `null` is a bad value like any other.
    const prefix = options.prefix === undefined ? 'rl:' : options.prefix;
    if (typeof prefix !== 'string' || prefix.includes('{') || prefix.includes('}')) {
      throw new InvalidOptionError('RedisStore.prefix', prefix, 'a string without { or }');
    }
    const buckets = options.buckets === undefined ? DEFAULT_BUCKETS : options.buckets;
    if (!Number.isInteger(buckets) || buckets < 1 || buckets > 2 ** 24) {
      throw new InvalidOptionError('RedisStore.buckets', buckets, 'an integer from 1 to 16777216');
    }
    const batchSize = batchSizeOf(options.batch);
    this.client = options.client;
    this.adapter = adapter;
    this.prefix = prefix;
    this.buckets = buckets;
    this.keyPrefix = adapter.keyPrefix;
    if (batchSize > 1) this.batcher = new Batcher(adapter, batchSize, adapter.masterOf !== undefined);
    if (adapter.masterOf !== undefined) this.failureDomain = (key, algorithm) => this.nodeOf(key, algorithm);
  }

  consume(key: string, algorithm: Algorithm, cost: number, now: number | undefined): Promise<Decision> {
    // Leases are taken with acquire(); here, as in the memory store, a lease limit reports its state.
    if (algorithm.stateKind === 'leases') return this.decide(key, algorithm, 'p', cost, NO_LEASE, now);
    return this.decide(key, algorithm, 'c', cost, undefined, now);
  }

  /** A reservation: one EVALSHA of the algorithm's script with operation 'v' and `maxDelayMs` (see `Store.reserve`). */
  reserve(key: string, algorithm: Algorithm, cost: number, maxDelayMs: number, now: number | undefined): Promise<Decision> {
    return this.decide(key, algorithm, 'v', cost, undefined, now, maxDelayMs);
  }

  peek(key: string, algorithm: Algorithm, cost: number, now: number | undefined): Promise<Decision> {
    return this.decide(key, algorithm, 'p', cost, algorithm.stateKind === 'leases' ? NO_LEASE : undefined, now);
  }

  async undo(key: string, algorithm: Algorithm, cost: number, now: number | undefined, chargedAt?: number, delayMs?: number): Promise<void> {
    // Leases are given back with release(), never undone.
    if (algorithm.stateKind === 'leases') return;
    await this.call(key, algorithm, 'u', cost, undefined, now, chargedAt, delayMs);
  }

  async reset(key: string, algorithm: Algorithm): Promise<void> {
    if (this.closed) throw new StoreClosedError();
    const plan = this.plan(algorithm);
    try {
      // In the compact layout a lockout is the field '#!<field>' (see block-read-compact.lua): lifted too.
      if (plan.compact) await this.adapter.hdel(this.bucketKey(plan, key), [fieldOf(key), `#!${fieldOf(key)}`]);
      else {
        // Keys of their own: a lockout is the state's `:block` key, lifted too, also through a
        // configuration without a lockout (whose keys do not list it).
        const keys = this.redisKeys(key, algorithm);
        if (algorithm.stateKind !== 'leases' && !plan.keys.includes(BLOCK_KEY_SUFFIX)) keys.push(redisKeyBase(this.prefix, key) + plan.suffix + BLOCK_KEY_SUFFIX);
        await this.adapter.del(keys);
      }
    } catch (error) {
      throw storeError('reset', error, this.adapter);
    }
  }

  acquire(key: string, algorithm: ConcurrencyAlgorithm, leaseId: string, now: number | undefined): Promise<Decision> {
    return this.decide(key, algorithm, 'a', 1, leaseId, now);
  }

  /** Gives a permit back; on a closed store it does nothing (as in the memory store: the lease expires by itself). */
  async release(key: string, algorithm: ConcurrencyAlgorithm, leaseId: string): Promise<void> {
    if (this.closed) return;
    await this.call(key, algorithm, 'r', 1, leaseId, undefined);
  }

  /** Marks the store closed (further calls throw `StoreClosedError`). The client stays open: close it yourself. */
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
    if (plan.compact) return [this.bucketKey(plan, key)];
    const name = redisKeyBase(this.prefix, key) + plan.suffix;
    return plan.keys.map((suffix) => name + suffix);
  }

  /** The hash field that holds `key`'s state in the compact layout; `undefined` for a state with keys of its own. */
  redisField(key: string, algorithm: Algorithm): string | undefined {
    return this.plan(algorithm).compact ? fieldOf(key) : undefined;
  }

  private decide(key: string, algorithm: Algorithm, op: Operation, cost: number, leaseId: string | undefined, now: number | undefined, maxDelayMs?: number): Promise<Decision> {
    const plan = this.plan(algorithm);
    // One `then` for both outcomes: the reply becomes a decision, a failure a StoreError.
    return this.send(plan, key, op, cost, leaseId, now, maxDelayMs).then(
      (reply) => {
        // Six exact doubles: allowed, remaining, ms to the reset, to a retry (read only when denied),
        // of the delay, and the `now` it decided at (see prelude.lua); rounded as every step's results are.
        const r = reply as Buffer;
        return decisionFromExact(r.readDoubleLE(0) === 1, r.readDoubleLE(8), r.readDoubleLE(16), r.readDoubleLE(24), r.readDoubleLE(32), algorithm.limit, algorithm.policy, r.readDoubleLE(40));
      },
      (error: unknown) => {
        throw storeError(plan.script.name, error, this.adapter);
      },
    );
  }

  private call(key: string, algorithm: Algorithm, op: Operation, cost: number, leaseId: string | undefined, now: number | undefined, chargedAt?: number, delayMs?: number): Promise<unknown> {
    const plan = this.plan(algorithm);
    return this.send(plan, key, op, cost, leaseId, now, chargedAt, delayMs).catch((error: unknown) => {
      throw storeError(plan.script.name, error, this.adapter);
    });
  }

  /**
   * One EVALSHA of the operation's script: its keys (the bucket and the field in the compact layout),
   * then the script's own argument, the lease id or else the cost, then `now` (absent: Redis TIME).
   * An undo's own arguments are the cost, then `chargedAt`, the time of the charge ('' for none), and
   * its delay (a reservation's; '' for none); a reservation's ('v') the cost and `maxDelay`, passed in
   * `chargedAt`. Inline, a cost is left out when it is 1 and nothing follows (the scripts read an
   * absent cost as 1). By argument, every argument is sent (`now` '' for Redis TIME), then the
   * configuration.
   */
  private send(plan: ScriptPlan, key: string, op: Operation, cost: number, leaseId: string | undefined, now: number | undefined, chargedAt?: number, delayMs?: number): Promise<unknown> {
    if (this.closed) throw new StoreClosedError();
    const run = plan.calls[op] ?? this.define(plan, op);
    const args: string[] = [];
    if (plan.compact) args.push(this.bucketKey(plan, key), fieldOf(key));
    else {
      const name = redisKeyBase(this.prefix, key) + plan.suffix;
      for (const suffix of plan.keys) args.push(name + suffix);
    }
    const batch = this.batcher?.join(plan, args[0]!);
    if (plan.byArgument || batch !== undefined) {
      // Every argument ('' for what is absent), then a configuration sent by argument: what a batch takes too.
      args.push(leaseId ?? String(cost));
      if (op === 'u' || op === 'v') args.push(chargedAt === undefined ? '' : String(chargedAt));
      if (op === 'u') args.push(delayMs === undefined ? '' : String(delayMs));
      args.push(now === undefined ? '' : String(now));
      if (plan.byArgument) for (const value of plan.values) args.push(value);
      if (batch !== undefined) return this.batcher!.add(batch, op, args);
    } else if (op === 'v') {
      // A reservation always sends its cost and maxDelay (in `chargedAt`).
      args.push(String(cost), String(chargedAt));
      if (now !== undefined) args.push(String(now));
    } else {
      // Inline, a cost of 1 without `now` is left out (the scripts read an absent cost as 1).
      const own = leaseId ?? (cost === 1 && now === undefined && chargedAt === undefined ? undefined : String(cost));
      if (own !== undefined) args.push(own);
      if (op === 'u' && own !== undefined && (chargedAt !== undefined || now !== undefined)) {
        args.push(chargedAt === undefined ? '' : String(chargedAt), delayMs === undefined ? '' : String(delayMs));
      }
      if (now !== undefined) args.push(String(now));
    }
    return run.apply(this.client, args);
  }

  /** On a Cluster, the slot of `key`'s Redis keys (`firstKey` the first: all of a limit's keys share its slot); 0 on a standalone client. */
  private slotOf(plan: ScriptPlan, key: string, firstKey: string): number {
    if (this.adapter.masterOf === undefined) return 0;
    // A bucket's slot is that of its hash tag, the same for every kind: computed once per bucket.
    if (plan.compact) return (this.bucketSlots[bucketOf(key, this.buckets)] ??= calculateSlot(this.keyPrefix + firstKey));
    return calculateSlot(this.keyPrefix + firstKey);
  }

  /** The master of `key`'s slot on the Cluster client (every key of a limit shares the slot of the first). */
  private nodeOf(key: string, algorithm: Algorithm): string {
    const plan = this.plan(algorithm);
    const firstKey = plan.compact ? this.bucketKey(plan, key) : redisKeyBase(this.prefix, key) + plan.suffix + plan.keys[0]!;
    return this.adapter.masterOf!(this.slotOf(plan, key, firstKey));
  }

  private bucketKey(plan: ScriptPlan, key: string): string {
    const bucket = bucketOf(key, this.buckets);
    // `#` and hex: a tag that hashTagOf never gives a storage key (a plain key never starts with `#`, a
    // digest is 44 characters), so a bucket never shares its name with a key of the per-key layout,
    // of this version or of an earlier one.
    return (plan.bucketKeys[bucket] ??= `${this.prefix}{#${bucket.toString(16)}}${plan.suffix}`);
  }

  /**
   * Defines the script of `op` for the plan's configuration (inline) or script (by argument) on the
   * client, once per store and script text: the plans that share the text share `plan.calls`.
   */
  private define(plan: ScriptPlan, op: Operation): ScriptCall {
    const declarations = plan.byArgument ? argumentDeclarations(plan, op) : inlineDeclarations(plan);
    const lua = `local OP, BATCH_TIME = '${op}', false\n${declarations}${plan.script.lua}`;
    const name = `rl_${plan.script.name.replace(/-/g, '_')}_${createHash('sha1').update(lua).digest('hex').slice(0, 16)}`;
    // The reply as a Buffer: the decision is binary (see prelude.lua), read without decoding it as text.
    const run = this.adapter.script(name, plan.script.numberOfKeys, lua);
    plan.calls[op] = run;
    this.definedScripts++;
    return run;
  }

  /**
   * The plan of an algorithm object, made on its first use. A configuration already inline shares its
   * scripts; a new one goes inline while fewer than `inlineLimit` are, and by argument after that (for
   * good: the table never evicts, since Redis would keep the evicted scripts cached anyway).
   */
  private plan(algorithm: Algorithm): ScriptPlan {
    let plan = this.plans.get(algorithm);
    if (plan === undefined) {
      const config = planScript(algorithm);
      let calls = this.inline.get(config.id);
      if (calls === undefined && this.inline.size < this.inlineLimit) this.inline.set(config.id, (calls = {}));
      const byArgument = calls === undefined;
      if (calls === undefined) {
        let ofScript = this.byArgument.get(config.script);
        if (ofScript === undefined) this.byArgument.set(config.script, (ofScript = new Map()));
        calls = ofScript.get(config.stateBytes);
        if (calls === undefined) ofScript.set(config.stateBytes, (calls = {}));
      }
      let bucketKeys = this.bucketKeysBySuffix.get(config.suffix);
      if (bucketKeys === undefined) this.bucketKeysBySuffix.set(config.suffix, (bucketKeys = []));
      // Every field named (not a spread): one object shape for every plan.
      const { script, values, stateBytes, id, suffix, compact, keys } = config;
      plan = { script, values, stateBytes, id, suffix, compact, keys, byArgument, bucketKeys, calls };
      this.plans.set(algorithm, plan);
    }
    return plan;
  }

  /**
   * Scripts this store has defined on its client (each one a script Redis caches): at most
   * {@link INLINE_CONFIGURATIONS} configurations' worth, plus one per script and operation sent by
   * argument; and with batching, at most one batch script per inline configuration and per script sent
   * by argument.
   */
  get scriptCount(): number {
    return this.definedScripts + (this.batcher?.scripts ?? 0);
  }
}

/**
 * For the store's own tests (the package does not export it): how many distinct configurations
 * `store` puts inline from now on; 0 sends every new configuration by argument.
 */
export function setInlineConfigurations(store: RedisStore, count: number): void {
  (store as unknown as { inlineLimit: number }).inlineLimit = count;
}

/** The most decisions per batch call `batch` asks for (1: no batching); throws {@link InvalidOptionError} for anything else. */
function batchSizeOf(batch: RedisStoreOptions['batch']): number {
  if (batch === undefined || batch === true) return DEFAULT_BATCH_SIZE;
  if (batch === false) return 1;
  if (batch !== null && typeof batch === 'object' && !Array.isArray(batch)) {
    for (const name of Object.keys(batch)) {
      if (name !== 'maxSize') throw new InvalidOptionError(`RedisStore.batch.${name}`, (batch as Record<string, unknown>)[name], 'no such option; batch takes maxSize');
    }
    const size = batch.maxSize === undefined ? DEFAULT_BATCH_SIZE : batch.maxSize;
    if (!Number.isInteger(size) || size < 2 || size > 1000) throw new InvalidOptionError('RedisStore.batch.maxSize', size, 'an integer from 2 to 1000');
    return size;
  }
  throw new InvalidOptionError('RedisStore.batch', batch, 'true, false or { maxSize }');
}

/**
 * Redis answers about one key, not about the server: a value of another type under the store's key
 * (another program wrote it), or the scripts' own check of a call's input (`ERR rl: …`). Such a
 * failure is `keyOnly`: the store-down circuit does not count it (see `StoreError.keyOnly`).
 */
const KEY_ONLY_REPLY = /^(?:WRONGTYPE |ERR rl: )/;

/** The failure as a StoreError; when the client is closed (every call fails at once), the message says why and what to do. */
function storeError(operation: string, error: unknown, adapter: ClientAdapter): StoreError {
  if (error instanceof StoreError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const closed = adapter.closedReason();
  return new StoreError(`Redis ${operation} failed: ${message}${closed === undefined ? '' : ` (${closed})`}`, { cause: error, keyOnly: KEY_ONLY_REPLY.test(message) });
}
