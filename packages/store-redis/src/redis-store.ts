import { ALGORITHM_KINDS, StoreClosedError, UnsupportedError, type Algorithm, type ChargeGroup, type ConcurrencyAlgorithm } from '@rl/core/store';
import type { Decision, IdempotentCharge, Settlement, Store, StoreCapabilities, StoredOverride } from '@rl/core/store';
import { KeyControls } from './key-controls.js';
import { Batcher } from './batcher.js';
import { adaptClient, type ClientAdapter, type RedisClient } from './clients/client.js';
import { GroupScripts } from './group-scripts.js';
import { fieldOf } from './keys.js';
import { RequestGroup, type ChargeOp, type GroupHost } from './request-group.js';
import { configurationArguments, type ScriptPlan } from './script-plan.js';
import { decisionOf } from './decision-reply.js';
import { ResetChannel } from './reset-channel.js';
import { ScriptPlans } from './script-plans.js';
import { StoreKeys } from './store-keys.js';
import { storeError } from './store-error.js';
import { parseStoreOptions, type RedisStoreOptions } from './store-options.js';
import { appendArguments, costOf, idempotentValues, timeOf, type Operation } from './wire.js';
import { luaScripts } from './lua-scripts.generated.js';

/** The lease id of a peek at a lease limit: none (no lease is ever named so), as in the memory store. */
const NO_LEASE = '';

/** The kinds whose keys the store overrides: those of the compact layout, whose scripts read an override (see src/overrides.ts). */
const OVERRIDDEN_KINDS = ALGORITHM_KINDS.filter((kind) => (luaScripts as Readonly<Record<string, { compact: boolean } | undefined>>)[kind]?.compact === true);

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
 *   (the bucket in hex, see `bucketOf`; the field is the key, see {@link fieldOf}): a fraction of
 *   the memory of a Redis key of its own. A bucket expires after the latest deadline among its fields
 *   (extended to twice the longest time a state can need, so most writes leave its expiry alone), and
 *   dead fields are removed as new ones arrive (see src/lua/compact-write.lua). Otherwise the state
 *   has keys of its own: `<prefix>{<key>}:<stateTag>` (see `redisKeyBase`), then the layout
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
  readonly capabilities: StoreCapabilities = { local: false, algorithms: ALGORITHM_KINDS, blocks: true, bans: true, overrides: OVERRIDDEN_KINDS, reservations: true, settle: true, idempotency: true };
  /** The client given, as given. */
  readonly client: RedisClient;
  readonly prefix: string;
  readonly buckets: number;
  /** The plan of each algorithm object, and the scripts defined on the client. */
  private readonly plans: ScriptPlans;
  /** The channel every process's deny caches hear resets on. */
  private readonly resets: ResetChannel;
  /** What an operator does to a key: bans, unbans, resets. */
  private readonly controls: KeyControls;
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
  /** Where each key's state is kept: its Redis keys and field, its Cluster slot. */
  private readonly keys: StoreKeys;
  /** Puts the decisions of a turn into batch calls; absent with `batch: false`. */
  private readonly batcher: Batcher | undefined;
  /** The scripts that decide a request's limits together (see {@link group}). */
  private readonly groupScripts = new GroupScripts();
  /** The request whose consumes are being collected (see {@link group}); undefined otherwise. */
  private openGroup: RequestGroup | undefined;
  /** What a request group needs of the store. */
  private readonly host: GroupHost;

  constructor(options: RedisStoreOptions) {
    const config = parseStoreOptions(options);
    const adapter = adaptClient(config.client as unknown);
    this.client = config.client;
    this.adapter = adapter;
    this.prefix = config.prefix;
    this.buckets = config.buckets;
    this.keys = new StoreKeys(config.prefix, config.buckets, adapter.keyPrefix, adapter.masterOf !== undefined);
    this.plans = new ScriptPlans(adapter);
    this.resets = new ResetChannel(adapter, config.prefix, config.confirmTimeoutMs);
    this.controls = new KeyControls(adapter, this.keys, this.resets);
    if (config.batchSize > 1) this.batcher = new Batcher(adapter, config.batchSize, adapter.masterOf !== undefined);
    if (adapter.masterOf !== undefined) this.failureDomain = (key, algorithm) => this.nodeOf(key, algorithm);
    this.host = this.groupHost();
  }

  /**
   * One EVALSHA of the algorithm's script: a consume ('c'), or with `maxDelayMs` a reservation ('v');
   * see `Store.consume`. While a request's group is open, a share of its group's call instead.
   */
  consume(key: string, algorithm: Algorithm, cost: number, now: number | undefined, maxDelayMs?: number, idempotency?: IdempotentCharge): Promise<Decision> {
    // Leases are taken with acquire(); here, as in the memory store, a lease limit reports its state.
    if (algorithm.stateKind === 'leases') return this.decide(key, algorithm, 'p', [NO_LEASE, timeOf(now)]);
    const op = idempotency !== undefined ? (maxDelayMs === undefined ? 'i' : 'j') : maxDelayMs === undefined ? 'c' : 'v';
    const values = op === 'c' ? [costOf(cost), timeOf(now)] : [costOf(cost), timeOf(now), timeOf(maxDelayMs), ...idempotentValues(idempotency)];
    return this.openGroup === undefined ? this.decide(key, algorithm, op, values) : this.openGroup.add(key, algorithm, op, values);
  }

  /**
   * Decides the consumes made until the group closes (one request's rate limits, see `Store.group`)
   * in one script call per Cluster slot (one on a standalone Redis), all-or-nothing: the group script
   * runs each limit's own step, and gives back in the same script what the earlier ones took when a
   * later one denies. Batched with the other requests' groups of the same turn.
   */
  group(holdMs: number): ChargeGroup {
    const group = new RequestGroup(this.host, holdMs, this.groupEnded);
    this.openGroup = group;
    return group;
  }

  /** A group closed: consumes go alone again. */
  private readonly groupEnded = (ended: RequestGroup): void => {
    if (this.openGroup === ended) this.openGroup = undefined;
  };

  peek(key: string, algorithm: Algorithm, cost: number, now: number | undefined): Promise<Decision> {
    return this.decide(key, algorithm, 'p', [algorithm.stateKind === 'leases' ? NO_LEASE : costOf(cost), timeOf(now)]);
  }

  async undo(key: string, algorithm: Algorithm, cost: number, now: number | undefined, chargedAt?: number, delayMs?: number, idempotencyId?: string): Promise<void> {
    // Leases are given back with release(), never undone.
    if (algorithm.stateKind === 'leases') return;
    await this.call(key, algorithm, idempotencyId === undefined ? 'u' : 'k', [costOf(cost), timeOf(now), undefined, timeOf(chargedAt), timeOf(delayMs), undefined, undefined, idempotencyId]);
  }

  /** Settles a charge at its real cost (see `Store.settle`): one call of the algorithm's script ('s'). */
  async settle(key: string, algorithm: Algorithm, { cost, actual, chargedAt, delayMs, maxDebt }: Settlement, now: number | undefined): Promise<void> {
    await this.call(key, algorithm, 's', [String(cost), timeOf(now), undefined, String(chargedAt), timeOf(delayMs), String(actual), String(maxDebt)]);
  }

  /** Forgets `key`'s state for this algorithm kind, its lockout or ban and its remembered ids (its override stays); every process's deny cache hears it. */
  reset(key: string, algorithm: Algorithm): Promise<void> {
    return this.control('reset', algorithm, (plan) => this.controls.reset(plan, key, algorithm));
  }

  /** Bans `key` for `durationMs` (see `Store.ban`): one call, where the blocking variants read a block. */
  ban(key: string, algorithm: Algorithm, durationMs: number, now: number | undefined): Promise<void> {
    return this.control('ban', algorithm, (plan) => this.controls.ban(plan, key, durationMs, now));
  }

  /** Lifts `key`'s ban or lockout (see `Store.unban`); every process's deny cache hears it, as a reset. */
  unban(key: string, algorithm: Algorithm): Promise<void> {
    return this.control('unban', algorithm, (plan) => this.controls.unban(plan, key));
  }

  /** Writes `key`'s override (see `Store.setOverride`): one call, the field '#=<field>' of its bucket hash; every process's deny cache hears it. */
  setOverride(key: string, override: Algorithm, ttlMs: number, now: number | undefined): Promise<void> {
    return this.control('setOverride', override, (plan) => this.controls.setOverride(plan, key, override, ttlMs, now), true);
  }

  getOverride(key: string, algorithm: Algorithm, now: number | undefined): Promise<StoredOverride | undefined> {
    return this.control('getOverride', algorithm, (plan) => this.controls.getOverride(plan, key, now));
  }

  clearOverride(key: string, algorithm: Algorithm): Promise<void> {
    return this.control('clearOverride', algorithm, (plan) => this.controls.clearOverride(plan, key));
  }

  /** An operator's call on a key through {@link KeyControls}, with `algorithm`'s plan (`detached`: one that runs no script); a failure as a `StoreError` naming `what`. */
  private async control<T>(what: string, algorithm: Algorithm, run: (plan: ScriptPlan) => Promise<T>, detached = false): Promise<T> {
    if (this.closed) throw new StoreClosedError();
    const plan = detached ? this.plans.detached(algorithm) : this.plans.of(algorithm);
    if (what.endsWith('Override') && !plan.compact) throw new UnsupportedError(`RedisStore: the ${algorithm.kind} algorithm keeps its state under keys of its own, where no override is read (capabilities.overrides lists the kinds it overrides).`);
    return run(plan).catch((error: unknown) => Promise.reject(storeError(what, error, this.adapter)));
  }

  acquire(key: string, algorithm: ConcurrencyAlgorithm, leaseId: string, now: number | undefined): Promise<Decision> {
    return this.decide(key, algorithm, 'a', [leaseId, timeOf(now)]);
  }

  /** Gives a permit back; on a closed store it does nothing (as in the memory store: the lease expires by itself). */
  async release(key: string, algorithm: ConcurrencyAlgorithm, leaseId: string): Promise<void> {
    if (this.closed) return;
    await this.call(key, algorithm, 'r', [leaseId]);
  }

  /**
   * Marks the store closed (further calls throw `StoreClosedError`) and closes the connection it
   * subscribed to its notices with, if any; resolves once that is closed. Nothing of the store stays on
   * the client (no listener). The client stays open: close it yourself. Closing the client first
   * closes that connection too.
   */
  close(): Promise<void> {
    this.closed = true;
    return this.resets.close();
  }

  /** Tells `listener` of every key reset on this Redis under this store's prefix, in any process, and whether it hears them now (see `Store.watchResets`). */
  watchResets(listener: (storageKey: string | undefined, hearing?: boolean) => void): void {
    this.resets.listen(listener);
  }

  /**
   * The Redis keys that hold `key`'s state for this algorithm kind (`key` being the full storage key the
   * limiter passes, prefix included): its bucket hash in the compact layout (the state is the field
   * {@link redisField}), its own keys otherwise. For inspection and tests: `TTL`, `MEMORY USAGE`.
   */
  redisKeys(key: string, algorithm: Algorithm): string[] {
    const plan = this.plans.of(algorithm);
    return plan.compact ? [this.keys.bucketKey(plan, key)] : this.keys.start(plan, key);
  }

  /** The hash field that holds `key`'s state in the compact layout; `undefined` for a state with keys of its own. */
  redisField(key: string, algorithm: Algorithm): string | undefined {
    return this.plans.of(algorithm).compact ? fieldOf(key) : undefined;
  }

  /** One decision: `values` are `op`'s arguments (see src/wire.ts), `undefined` for an absent one. */
  private decide(key: string, algorithm: Algorithm, op: Operation, values: readonly (string | undefined)[]): Promise<Decision> {
    const plan = this.plans.of(algorithm);
    // One `then` for both outcomes: the reply becomes a decision, a failure a StoreError.
    return this.send(plan, key, op, values).then(
      (reply) => decisionOf(reply as Buffer, 0, algorithm),
      (error: unknown) => {
        throw storeError(plan.script.name, error, this.adapter);
      },
    );
  }

  /** A call that returns nothing (an undo, a release). */
  private call(key: string, algorithm: Algorithm, op: Operation, values: readonly (string | undefined)[]): Promise<unknown> {
    const plan = this.plans.of(algorithm);
    return this.send(plan, key, op, values).catch((error: unknown) => {
      throw storeError(plan.script.name, error, this.adapter);
    });
  }

  /**
   * One EVALSHA of the operation's script, or a share of a batch call: its keys (the bucket and the
   * field in the compact layout), its arguments (src/wire.ts), then for a configuration sent by
   * argument the configuration. Inline, the absent arguments at the end are left out.
   */
  private send(plan: ScriptPlan, key: string, op: Operation, values: readonly (string | undefined)[]): Promise<unknown> {
    if (this.closed) throw new StoreClosedError();
    const run = plan.calls[op] ?? this.plans.define(plan, op);
    const args = this.keys.start(plan, key, op);
    const batch = this.batcher?.join(plan, args[0]!);
    // A batch, like a call by argument, sends every argument and then the configuration.
    const inline = !plan.byArgument && batch === undefined;
    appendArguments(args, op, values, inline);
    if (plan.byArgument) for (const value of configurationArguments(plan, values)) args.push(value);
    if (batch !== undefined) return this.batcher!.add(batch, op, args);
    return run.apply(this.client, args);
  }

  /** The master of `key`'s slot on the Cluster client (every key of a limit shares the slot of the first). */
  private nodeOf(key: string, algorithm: Algorithm): string {
    const plan = this.plans.of(algorithm);
    return this.adapter.masterOf!(this.keys.slotOf(plan, key, this.keys.firstKey(plan, key)));
  }

  /** The store as its request groups see it. */
  private groupHost(): GroupHost {
    return {
      isClosed: () => this.closed,
      keys: this.keys,
      scripts: this.groupScripts,
      planOf: (algorithm) => this.plans.of(algorithm),
      alone: (key: string, algorithm: Algorithm, op: ChargeOp, values: readonly (string | undefined)[]) => this.decide(key, algorithm, op, values),
      run: (script, keys, argv, decisions) => {
        // Batched with the groups on the same first Redis key, as decisions are: a migration splits no more.
        if (this.batcher !== undefined) return this.batcher.sendGroup(script, keys[0]!, keys, argv, decisions);
        script.call ??= this.adapter.batchScript(script.name, script.lua);
        return script.call(keys.length, [...keys, '1', ...argv]).then((replies) => (replies as unknown[])[0]);
      },
      decision: decisionOf,
      failure: (plan, error) => storeError(plan.script.name, error, this.adapter),
    };
  }

  /**
   * Scripts this store has defined on its client (each one a script Redis caches): at most
   * {@link INLINE_CONFIGURATIONS} configurations' worth, plus one per script and operation sent by
   * argument; and with batching, at most one batch script per inline configuration and per script sent
   * by argument.
   */
  get scriptCount(): number {
    return this.plans.defined + (this.batcher?.scripts ?? this.groupScripts.size);
  }
}
