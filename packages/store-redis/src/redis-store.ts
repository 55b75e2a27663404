import { ALGORITHM_KINDS, type Algorithm, type ConcurrencyAlgorithm } from '@rl/core/store';
import type {
  Charge,
  ChargeAllOptions,
  Charged,
  Decision,
  GiveBack,
  Settlement,
  Store,
  StoreCapabilities,
  StoredOverride,
  TimedCharge,
} from '@rl/core/store';
import { Batcher } from './batcher.js';
import { Charges, NO_LEASE } from './charges.js';
import { adaptClient, type ClientAdapter, type RedisClient } from './clients/client.js';
import { ControlCommands } from './control-commands.js';
import { fieldOf } from './keys.js';
import { ResetChannel } from './reset-channel.js';
import { ScriptPlans } from './script-plans.js';
import { ScriptSender } from './script-sender.js';
import { StoreKeys } from './store-keys.js';
import { parseStoreOptions, type RedisStoreOptions } from './store-options.js';
import { costOf, timeOf } from './wire.js';
import { luaScripts } from './lua-scripts.generated.js';

/** The kinds whose keys the store overrides: those of the compact layout, whose scripts read an override (see src/overrides.ts). */
const OVERRIDDEN_KINDS = ALGORITHM_KINDS.filter(
  (kind) => (luaScripts as Readonly<Record<string, { compact: boolean } | undefined>>)[kind]?.compact === true,
);

/**
 * The Redis store: shared limits for every app instance that uses the same Redis (standalone or
 * Cluster). Each decision is one `EVALSHA` of the Lua port of the algorithm's step (`EVAL` after a
 * `SCRIPT FLUSH` or a restart: sent by ioredis's `defineCommand`, by the store for node-redis; see
 * src/clients/), so it is atomic per key and takes one round trip; or, issued in the same turn of the
 * event loop as others of its configuration, a share of one batch call ({@link Batcher}), which runs
 * each decision as that script would. The first {@link INLINE_CONFIGURATIONS} distinct configurations (an algorithm's
 * script and numbers) each have a script per call (src/wire.ts) with the parameters in its text, so a call
 * sends only the key, the cost and, with an app clock, `now`; every further configuration is sent by
 * argument to one script per script name and call, so any number of configurations (quotas built
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
 * - Parts, one job each, of which this class is the facade: {@link Charges} (a charge, a give-back, a
 *   request's charges together: charges.ts, request-group.ts), {@link ControlCommands} (an operator's
 *   calls on a key), {@link ScriptSender} (each call alone or in a batch), `ScriptPlans` (the scripts of
 *   each configuration), `StoreKeys` (where a key's state is), `ResetChannel` (the notices).
 *
 * Needs Redis 6.2 or later (`HRANDFIELD`).
 */
export class RedisStore implements Store {
  readonly capabilities: StoreCapabilities = {
    local: false,
    algorithms: ALGORITHM_KINDS,
    blocks: true,
    bans: true,
    overrides: OVERRIDDEN_KINDS,
    reservations: true,
    settle: true,
    idempotency: true,
  };
  /** The client given, as given. */
  readonly client: RedisClient;
  readonly prefix: string;
  readonly buckets: number;
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
  /** The plan of each algorithm object, and the scripts defined on the client. */
  private readonly plans: ScriptPlans;
  /** Sends the script calls, alone or batched; closed with the store. */
  private readonly sender: ScriptSender;
  /** Puts the decisions of a turn into batch calls; absent with `batch: false`. */
  private readonly batcher: Batcher | undefined;
  /** Charges, give-backs and a request's charges together. */
  private readonly charges: Charges;
  /** The channel every process's deny caches hear resets on. */
  private readonly resets: ResetChannel;
  /** What an operator does to a key: bans, unbans, overrides, resets. */
  private readonly controls: ControlCommands;

  constructor(options: RedisStoreOptions) {
    const config = parseStoreOptions(options);
    const adapter = adaptClient(config.client as unknown);
    const cluster = adapter.cluster;
    this.client = config.client;
    this.adapter = adapter;
    this.prefix = config.prefix;
    this.buckets = config.buckets;
    this.keys = new StoreKeys(config.prefix, config.buckets, adapter.keyPrefix, cluster);
    this.plans = new ScriptPlans(adapter);
    if (config.batchSize > 1) this.batcher = new Batcher(adapter, config.batchSize, cluster);
    this.sender = new ScriptSender({
      client: config.client,
      adapter,
      plans: this.plans,
      keys: this.keys,
      batcher: this.batcher,
    });
    this.charges = new Charges(this.sender, this.plans, this.keys);
    this.resets = new ResetChannel(adapter, config.prefix, config.confirmTimeoutMs);
    this.controls = new ControlCommands({
      adapter,
      plans: this.plans,
      keys: this.keys,
      resets: this.resets,
      closed: () => this.sender.closed,
    });
    if (adapter.masterOf !== undefined) this.failureDomain = (key, algorithm) => this.nodeOf(key, algorithm);
  }

  /**
   * One EVALSHA of the algorithm's script (or a share of a batch call): a consume, or with `maxDelayMs`
   * a reservation, either with its idempotent charge (see `Store.charge`). Throws `StoreClosedError` at
   * once on a closed store.
   */
  charge(charge: Charge, now: number | undefined): Promise<Charged> {
    return this.charges.charge(charge, now);
  }

  /**
   * Decides one request's charges in one script call per Cluster slot (one on a standalone Redis),
   * all-or-nothing (see `Store.chargeAll`); batched with the other requests' groups of the same turn.
   */
  chargeAll(charges: readonly TimedCharge[], options: ChargeAllOptions): readonly Promise<Charged>[] {
    return this.charges.chargeAll(charges, options);
  }

  peek(key: string, algorithm: Algorithm, cost: number, now: number | undefined): Promise<Decision> {
    return this.sender.decide(key, algorithm, 'p', [
      algorithm.stateKind === 'leases' ? NO_LEASE : costOf(cost),
      timeOf(now),
    ]);
  }

  /** Gives back units of an earlier charge (see `Store.giveBack`): one call of the algorithm's script ('u'). */
  giveBack(back: GiveBack, now: number | undefined): Promise<void> {
    return this.charges.giveBack(back, now);
  }

  /** Settles a charge at its real cost (see `Store.settle`): one call of the algorithm's script ('s'). */
  async settle(
    key: string,
    algorithm: Algorithm,
    { cost, actual, chargedAt, delayMs, maxDebt }: Settlement,
    now: number | undefined,
  ): Promise<void> {
    await this.sender.run(key, algorithm, 's', [
      String(cost),
      timeOf(now),
      undefined,
      String(chargedAt),
      timeOf(delayMs),
      String(actual),
      String(maxDebt),
    ]);
  }

  /** Forgets `key`'s state for this algorithm kind, its lockout or ban and its remembered ids (its override stays); every process's deny cache hears it. */
  reset(key: string, algorithm: Algorithm): Promise<void> {
    return this.controls.reset(key, algorithm);
  }

  /** Bans `key` for `durationMs` (see `Store.ban`): one call, where the blocking variants read a block. */
  ban(key: string, algorithm: Algorithm, durationMs: number, now: number | undefined): Promise<void> {
    return this.controls.ban(key, algorithm, durationMs, now);
  }

  /** Lifts `key`'s ban or lockout (see `Store.unban`); every process's deny cache hears it, as a reset. */
  unban(key: string, algorithm: Algorithm): Promise<void> {
    return this.controls.unban(key, algorithm);
  }

  /** Writes `key`'s override (see `Store.setOverride`): one call, the field '#=<field>' of its bucket hash; every process's deny cache hears it. */
  setOverride(key: string, override: Algorithm, ttlMs: number, now: number | undefined): Promise<void> {
    return this.controls.setOverride(key, override, ttlMs, now);
  }

  getOverride(key: string, algorithm: Algorithm, now: number | undefined): Promise<StoredOverride | undefined> {
    return this.controls.getOverride(key, algorithm, now);
  }

  clearOverride(key: string, algorithm: Algorithm): Promise<void> {
    return this.controls.clearOverride(key, algorithm);
  }

  acquire(key: string, algorithm: ConcurrencyAlgorithm, leaseId: string, now: number | undefined): Promise<Decision> {
    return this.sender.decide(key, algorithm, 'a', [leaseId, timeOf(now)]);
  }

  /** Gives a permit back; on a closed store it does nothing (as in the memory store: the lease expires by itself). */
  async release(key: string, algorithm: ConcurrencyAlgorithm, leaseId: string): Promise<void> {
    if (this.sender.closed) return;
    await this.sender.run(key, algorithm, 'r', [leaseId]);
  }

  /**
   * Marks the store closed (further calls throw `StoreClosedError`) and closes the connection it
   * subscribed to its notices with, if any; resolves once that is closed. Nothing of the store stays on
   * the client (no listener). The client stays open: close it yourself. Closing the client first
   * closes that connection too.
   */
  close(): Promise<void> {
    this.sender.close();
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

  /** The master of `key`'s slot on the Cluster client (every key of a limit shares the slot of the first). */
  private nodeOf(key: string, algorithm: Algorithm): string {
    const plan = this.plans.of(algorithm);
    return this.adapter.masterOf!(this.keys.slotOf(plan, key, this.keys.firstKey(plan, key)));
  }

  /**
   * Scripts this store has defined on its client (each one a script Redis caches): at most
   * {@link INLINE_CONFIGURATIONS} configurations' worth, plus one per script and call sent by
   * argument; and with batching, at most one batch script per inline configuration and per script sent
   * by argument.
   */
  get scriptCount(): number {
    return this.plans.defined + (this.batcher?.scripts ?? this.charges.groupScripts.size);
  }
}
