import {
  ALGORITHM_KINDS,
  BlockTable,
  OverrideTable,
  ResetListeners,
  StoreClosedError,
  decidedUnder,
  requestUnder,
  type Algorithm,
  type Charge,
  type Charged,
  type Clock,
  type ConcurrencyAlgorithm,
  type Decision,
  type GiveBack,
  type Settlement,
  type SettleRequest,
  type StepRequest,
  type Store,
  type StoreCapabilities,
  type StoredOverride,
} from '@rl/core/store';
import { heldKey, heldLocal, heldScope } from './held-key.js';
import { decideIdempotent, RememberedIds } from './remembered-ids.js';
import { parseMemoryStoreOptions, type MemoryStoreOptions } from './memory-store-options.js';
import { Sweeper, type Sweepable } from './sweeper.js';
import { LeaseTable, LogTable, NumericTables, type AnyTable } from './tables.js';

export { MAX_PLAIN_KEY_LENGTH } from './held-key.js';

/** The kinds a key's override can change (every rate kind: a concurrency limit takes none). */
const RATE_KINDS = ALGORITHM_KINDS.filter((kind) => kind !== 'concurrency');
export type { MemoryStoreOptions } from './memory-store-options.js';

/**
 * What a memory store runs: every algorithm and every capability, in this process. A store that
 * decides with a memory store elsewhere (the cluster store's holder) declares the same, not local.
 */
export const MEMORY_STORE_CAPABILITIES: StoreCapabilities = Object.freeze({
  local: true,
  algorithms: ALGORITHM_KINDS,
  blocks: true,
  bans: true,
  overrides: RATE_KINDS,
  reservations: true,
  settle: true,
  idempotency: true,
});

/**
 * The in-process store. Each decision runs synchronously (read, step, write in one event-loop turn),
 * so it is atomic per key. Memory stays bounded: fully recovered state is swept by one unref'd timer
 * and at most `maxKeys` keys are kept (least recently used evicted first). Zero dependencies. Runs
 * lockouts (`capabilities.blocks`): a block is kept beside the state, at most `maxKeys` of them, the
 * ended ones swept. Tells every limiter on it of each reset, ban, unban and override inside its call.
 *
 * State is kept per key and per algorithm kind; two limiters of the same kind and the same prefix share
 * state, and a changed configuration applies to it (balances clamped to the new capacity).
 */
export class MemoryStore implements Store {
  readonly capabilities: StoreCapabilities = MEMORY_STORE_CAPABILITIES;
  readonly maxKeys: number;
  private readonly clock: Clock;
  /** The tables of states, each given the store's eviction (`makeRoom`) to call before it adds a key (the log table's also counts it). */
  private readonly numeric = new NumericTables((table, now) => this.makeRoom(table, now));
  private readonly logs = new LogTable((table, now) => {
    this.makeRoom(table, now);
    this.size++;
  });
  private readonly leases = new LeaseTable((table, now) => this.makeRoom(table, now));
  /** The ids of idempotent charges each key remembers (each id one of `maxKeys`). */
  private readonly ids = new RememberedIds();
  /** Lockouts (`blockDuration`) and bans, beside the states: at most `maxKeys`, the ended ones swept. */
  private readonly blocks: BlockTable;
  /** Overrides (`setOverride`), beside the states: at most `maxKeys`, the ended ones swept. */
  private readonly overrides: OverrideTable;
  private size = 0;
  private closed = false;
  /** The one sweep timer, and where its last step stopped. */
  private readonly sweeper: Sweeper;
  /** The limiters' listeners ({@link watchResets}). */
  private readonly resets = new ResetListeners();
  /** The latest `now` seen, which the sweeper projects forward (works with fake clocks too). */
  private lastNow = -Infinity;
  /**
   * The latest `now` a caller passed (a limiter's `clock`), -Infinity while none has: the sweeper never
   * sweeps past it, since such a clock need not run at the timers' pace (a frozen or simulated clock).
   */
  private callerNow = -Infinity;
  /** What the sweeper sweeps. */
  private readonly sweepable: Sweepable = {
    tables: () => this.tables(),
    blocks: () => this.blocks,
    overrides: () => this.overrides,
    lastNow: () => this.lastNow,
    callerNow: () => this.callerNow,
    removed: (count) => {
      this.size -= count;
    },
  };

  constructor(options: MemoryStoreOptions = {}) {
    const { maxKeys, clock, timers, sweepIntervalMs } = parseMemoryStoreOptions(options);
    this.maxKeys = maxKeys;
    this.blocks = new BlockTable(maxKeys);
    this.overrides = new OverrideTable(maxKeys);
    this.clock = clock;
    this.sweeper = new Sweeper(this.sweepable, timers, sweepIntervalMs);
  }

  /** Number of keys held (all limits together). */
  get keyCount(): number {
    return this.size;
  }

  /**
   * The one charge (see `Store.charge`): a consume, a reservation (`maxDelayMs`), an idempotent charge;
   * a plain one answers `{ decision, took: 'charged' }`, its one record. The step's request is built
   * once here, every field in `StepRequest`'s order, and goes down to the algorithm as it is. The
   * charge's key is found by its parts when it has them (see `KeyIndex`).
   */
  charge(charge: Charge, now: number | undefined): Charged {
    const t = now === undefined ? this.clock() : (this.callerNow = now);
    const request: StepRequest = { now: t, cost: charge.cost, commit: true, maxDelay: charge.maxDelayMs };
    if (charge.idempotency !== undefined) return this.chargeIdempotent(charge, request);
    return {
      decision: this.decideHeld(heldScope(charge), heldLocal(charge), charge.algorithm, request),
      took: 'charged',
    };
  }

  /** {@link charge} of a charge with an idempotency id (see `decideIdempotent`). */
  private chargeIdempotent(charge: Charge, request: StepRequest): Charged {
    const scope = heldScope(charge);
    const local = heldLocal(charge);
    const key = heldKey(charge.key);
    const algorithm = charge.algorithm;
    const t = request.now;
    return decideIdempotent(
      this.ids,
      { slot: RememberedIds.slot(key, algorithm), idempotency: charge.idempotency!, now: t },
      {
        blocked: () => (algorithm.checksBlocks ? this.blockDenial(scope, local, algorithm, request) : undefined),
        charge: () => this.decideHeld(scope, local, algorithm, request),
        peek: () => this.decideHeld(scope, local, algorithm, { now: t, cost: 0, commit: false, maxDelay: undefined }),
        room: () => this.makeRoom(this.ids, t),
        recorded: (change) => void (this.size += change),
      },
    );
  }

  peek(key: string, algorithm: Algorithm, cost: number, now: number | undefined): Decision {
    return this.decideHeld(undefined, heldKey(key), algorithm, {
      now: now === undefined ? this.clock() : (this.callerNow = now),
      cost,
      commit: false,
      maxDelay: undefined,
    });
  }

  /** Gives back units of an earlier charge (see `Store.giveBack`), forgetting its remembered id in the same step. */
  giveBack(back: GiveBack, now: number | undefined): void {
    const key = heldKey(back.key);
    const scope = heldScope(back);
    const local = heldLocal(back);
    const t = this.openAt(now);
    if (back.idempotencyId !== undefined)
      this.size += this.ids.forget(RememberedIds.slot(key, back.algorithm), back.idempotencyId);
    const algorithm = this.overrides.decidingWith(key, back.algorithm, t);
    if (algorithm.stateKind === 'numeric') {
      const table = this.numeric.get(algorithm.stateTag);
      const slot = table?.index.get(scope, local);
      if (table !== undefined && slot !== undefined)
        algorithm.undo(table.data, slot * table.stride, {
          now: t,
          cost: back.cost,
          chargedAt: back.chargedAt,
          delayMs: back.delayMs,
        });
    } else if (algorithm.stateKind === 'log') {
      const entry = this.logs.index.get(scope, local);
      if (entry !== undefined)
        algorithm.undo(entry.state, { now: t, cost: back.cost, chargedAt: back.chargedAt, delayMs: back.delayMs });
    }
  }

  /** Settles a charge at its real cost (see `Store.settle`): a state is made for a charge above the estimate when none is held. */
  settle(key: string, algorithm: Algorithm, settlement: Settlement, now: number | undefined): void {
    key = heldKey(key);
    const t = this.openAt(now);
    algorithm = this.overrides.decidingWith(key, algorithm, t);
    const { cost, actual, chargedAt, delayMs, maxDebt } = settlement;
    const request: SettleRequest = { now: t, cost, actual, chargedAt, delayMs, maxDebt };
    if (algorithm.stateKind === 'numeric') {
      // The change first, then the sum: `size += settle(…)` would read the size before the eviction the settle may make.
      const added = this.numeric.of(algorithm).settle(key, algorithm, request);
      this.size += added;
    } else if (algorithm.stateKind === 'log') {
      const entry = this.logs.index.get(undefined, key);
      if (entry === undefined) return;
      algorithm.settle(entry.state, request);
      entry.deadline = Math.max(entry.deadline, algorithm.expiresAt(entry.state));
    }
  }

  /** Bans `key` for `durationMs` (see `Store.ban`): its block, beside the state, at most `maxKeys` of them. */
  ban(key: string, algorithm: Algorithm, durationMs: number, now: number | undefined): void {
    const t = this.openAt(now);
    this.blocks.ban(heldKey(key), algorithm, t + durationMs, t);
    this.resets.tell(key);
  }

  /** Lifts `key`'s ban or lockout (see `Store.unban`). */
  unban(key: string, algorithm: Algorithm): void {
    this.assertOpen();
    this.blocks.lift(heldKey(key), algorithm);
    this.resets.tell(key);
  }

  /** Decides `key` with `override` for `ttlMs` (see `Store.setOverride`): beside the state, at most `maxKeys` overrides. */
  setOverride(key: string, override: Algorithm, ttlMs: number, now: number | undefined): void {
    const t = this.openAt(now);
    this.overrides.set(heldKey(key), override, t + ttlMs, t);
    this.resets.tell(key);
  }

  getOverride(key: string, algorithm: Algorithm, now: number | undefined): StoredOverride | undefined {
    return this.overrides.get(heldKey(key), algorithm, this.openAt(now));
  }

  clearOverride(key: string, algorithm: Algorithm): void {
    this.assertOpen();
    this.overrides.clear(heldKey(key), algorithm);
    this.resets.tell(key);
  }

  /** Forgets the key's state of this kind, its block and its remembered ids (its override stays: a configuration, not a state), and tells the limiters. */
  reset(storageKey: string, algorithm: Algorithm): void {
    const key = heldKey(storageKey);
    this.assertOpen();
    this.blocks.lift(key, algorithm);
    this.size += this.ids.forgetAll(RememberedIds.slot(key, algorithm));
    const table =
      algorithm.stateKind === 'numeric'
        ? this.numeric.get(algorithm.stateTag)
        : algorithm.stateKind === 'log'
          ? this.logs
          : this.leases;
    if (table?.delete(undefined, key) !== undefined) this.size--;
    this.resets.tell(storageKey);
  }

  /** Tells `listener` (held weakly) of each reset, ban, unban and override by its storage key inside the control's call (see `Store.watchResets`). */
  watchResets(listener: (storageKey: string | undefined) => void): void {
    this.resets.listen(listener);
  }

  acquire(key: string, algorithm: ConcurrencyAlgorithm, leaseId: string, now: number | undefined): Decision {
    const t = this.openAt(now);
    if (this.lastNow === -Infinity) this.sweeper.start();
    this.lastNow = t;
    const { decision, added } = this.leases.take(heldKey(key), algorithm, leaseId, t);
    this.size += added;
    return decision;
  }

  release(key: string, _algorithm: ConcurrencyAlgorithm, leaseId: string): void {
    if (!this.closed) this.size += this.leases.give(heldKey(key), leaseId);
  }

  /** Stops the sweep timer and drops all state. Further calls throw `StoreClosedError`. */
  close(): void {
    this.sweeper.stop();
    this.closed = true;
    this.numeric.clear();
    this.logs.index.clear();
    this.leases.index.clear();
    this.ids.index.clear();
    this.blocks.clear();
    this.overrides.clearAll();
    this.size = 0;
  }

  /**
   * Deletes every state that has fully recovered at `now` (default: the latest time seen, projected
   * forward). The timer does this in bounded batches; call it directly in tests or before a snapshot.
   * Returns the number of keys removed.
   */
  sweep(now: number = this.sweeper.projectedNow()): number {
    return this.sweeper.sweepAll(now);
  }

  /**
   * A decision of `request` (its `now` the store's clock when the limiter has none) for the key held as
   * `local` in `scope` (see `KeyIndex.get`, {@link heldScope}), through its lockout if the algorithm has
   * one. The key goes down as two strings, not a record: a record would be allocated at each call the
   * compiler does not inline (docs/design/stores.md, issue 39).
   */
  private decideHeld(scope: string | undefined, local: string, algorithm: Algorithm, request: StepRequest): Decision {
    // The lockout's closure in a method of its own: the plain path allocates no context for it.
    if (algorithm.checksBlocks) return this.decideBlocked(scope, local, algorithm, request);
    // The storage key is joined only for an algorithm that checks overrides.
    return algorithm.checksOverrides === true
      ? this.decideOverridden(scope, local, algorithm, request)
      : this.decide(scope, local, algorithm, request);
  }

  /** {@link decide} with the configuration the key's live override makes, if any; its denial as `decidedUnder` says. */
  private decideOverridden(
    scope: string | undefined,
    local: string,
    algorithm: Algorithm,
    request: StepRequest,
  ): Decision {
    const override = this.overrides.get(joined(scope, local), algorithm, request.now);
    if (override === undefined) return this.decide(scope, local, algorithm, request);
    return decidedUnder(
      override,
      this.decide(scope, local, override.algorithm, requestUnder(override, request)),
      request,
      0,
    );
  }

  /** A decision through the key's block (see `BlockTable.denial`), with the configuration its override makes (as {@link decideOverridden}). */
  private decideBlocked(
    scope: string | undefined,
    local: string,
    algorithm: Algorithm,
    request: StepRequest,
  ): Decision {
    const blocked = this.blockDenial(scope, local, algorithm, request);
    if (blocked !== undefined) return blocked;
    const t = request.now;
    const key = joined(scope, local);
    const override = algorithm.checksOverrides === true ? this.overrides.get(key, algorithm, t) : undefined;
    const deciding = override === undefined ? algorithm : override.algorithm;
    const asked = override === undefined ? request : requestUnder(override, request);
    if (!request.commit) {
      const peeked = this.decide(scope, local, deciding, asked);
      return override === undefined ? peeked : decidedUnder(override, peeked, request, 0);
    }
    const stepped = this.decide(scope, local, deciding, withCommit(asked, true));
    const decision = this.blocks.recorded(key, algorithm, t, stepped);
    if (override === undefined) return decision;
    return decidedUnder(override, decision, request, decision === stepped ? 0 : decision.retryAfterMs);
  }

  /** While the key is blocked (a lockout or a ban), the block's denial, its override's end weighed in (see `decidedUnder`); otherwise undefined. */
  private blockDenial(
    scope: string | undefined,
    local: string,
    algorithm: Algorithm,
    request: StepRequest,
  ): Decision | undefined {
    const t = request.now;
    const key = joined(scope, local);
    const override = algorithm.checksOverrides === true ? this.overrides.get(key, algorithm, t) : undefined;
    const deciding = override === undefined ? algorithm : override.algorithm;
    const blocked = this.blocks.denial(key, algorithm, t, (write) =>
      this.decide(scope, local, deciding, withCommit(request, write)),
    );
    return blocked === undefined || override === undefined
      ? blocked
      : decidedUnder(override, blocked, request, blocked.retryAfterMs);
  }

  /**
   * The decision of `request` for the key held as `local` in `scope`, by `algorithm` as it decides
   * there (its override applied). Only a known key of a numeric layout in an open, started store is
   * decided here; the rest in {@link decideOffPath}. The split is for the compiler: the smaller this
   * path, with what it inlines, the more of it its callers inline, so the charge and its answer are
   * not allocated whichever is optimized first (docs/design/stores.md).
   */
  private decide(scope: string | undefined, local: string, algorithm: Algorithm, request: StepRequest): Decision {
    if (algorithm.stateKind !== 'numeric' || this.closed || this.lastNow === -Infinity)
      return this.decideOffPath(scope, local, algorithm, request);
    const table = this.numeric.of(algorithm);
    const slot = table.index.get(scope, local);
    if (slot === undefined) return this.decideOffPath(scope, local, algorithm, request);
    this.lastNow = request.now;
    table.touched[slot] = 1;
    const offset = slot * table.stride;
    const decision = algorithm.step(table.data, offset, false, request);
    if (request.commit) table.wrote(slot, algorithm.expiresAt(table.data, offset));
    return decision;
  }

  /** {@link decide} of every other case: a closed store, its first decision, a new key, a log, a concurrency peek. */
  private decideOffPath(
    scope: string | undefined,
    local: string,
    algorithm: Algorithm,
    request: StepRequest,
  ): Decision {
    if (this.closed) throw new StoreClosedError();
    const now = request.now;
    if (this.lastNow === -Infinity) this.sweeper.start();
    this.lastNow = now;
    if (algorithm.stateKind === 'numeric') {
      const table = this.numeric.of(algorithm);
      const commit = request.commit;
      let slot = table.index.get(scope, local);
      let fresh = false;
      if (slot !== undefined) table.touched[slot] = 1;
      else if (!commit) return algorithm.step(table.data, 0, true, request);
      else {
        this.makeRoom(table, now);
        slot = table.allocate(scope, local);
        this.size++;
        fresh = true;
      }
      const offset = slot * table.stride;
      const decision = algorithm.step(table.data, offset, fresh, request);
      if (commit) table.wrote(slot, algorithm.expiresAt(table.data, offset));
      return decision;
    }
    if (algorithm.stateKind === 'log') return this.logs.decide(scope, local, algorithm, request);
    // Concurrency: a peek reports the permits in use.
    const entry = this.leases.index.get(scope, local);
    return algorithm.acquire(entry?.state, now, '', false).decision;
  }

  /** Evicts before an insert when the store is full: from this table, else from the fullest other one. */
  private makeRoom(table: AnyTable, now: number): void {
    if (this.size < this.maxKeys) return;
    let victim: AnyTable = table;
    if (victim.index.size === 0) {
      for (const other of this.tables()) if (other.index.size > victim.index.size) victim = other;
    }
    this.size -= victim.evictOne(now);
  }

  private *tables(): Iterable<AnyTable> {
    yield* this.numeric.values();
    yield this.logs;
    yield this.leases;
    yield this.ids;
  }

  private assertOpen(): void {
    if (this.closed) throw new StoreClosedError();
  }

  /** `now`, or the store's clock when undefined, once the store is known open. */
  private openAt(now: number | undefined): number {
    this.assertOpen();
    return now === undefined ? this.clock() : (this.callerNow = now);
  }
}

/** The storage key (as held) of the key held as `local` in `scope` (see `KeyIndex.get`). */
function joined(scope: string | undefined, local: string): string {
  return scope === undefined ? local : scope + local;
}

/** `request` with `commit` (itself when it already has it): the same fields in the same order, so the steps see one object shape. */
function withCommit(request: StepRequest, commit: boolean): StepRequest {
  return commit === request.commit
    ? request
    : { now: request.now, cost: request.cost, commit, maxDelay: request.maxDelay };
}
