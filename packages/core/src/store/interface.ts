import type { Algorithm, ConcurrencyAlgorithm, Settlement } from '../algorithm.js';
import type { Decision } from '../decision.js';

/** A value, or a promise of it: local stores answer synchronously, remote stores asynchronously. */
export type MaybePromise<T> = T | Promise<T>;

/**
 * What a store can do, for the conformance suite and for the limiter.
 */
export interface StoreCapabilities {
  /** The store is in this process (no I/O): answers are synchronous and the deny cache is pointless. */
  readonly local: boolean;
  /**
   * False for a store that hears only its own instance's controls (a reset, a ban, an unban, an
   * override made through it), never those of other instances sharing its state (a Durable Object
   * store's isolates): its `watchResets` says `hearing: false`, and a deny cache on it remembers
   * nothing. Absent: it hears every instance's, or keeps no state shared between instances.
   */
  readonly hearsEveryInstance?: boolean;
  /** Supported algorithm kinds. */
  readonly algorithms: readonly Algorithm['kind'][];
  /**
   * The store runs lockouts: algorithms with `blockMs > 0` (`withBlock`, the limiter's
   * `blockDuration`), the block written with the denial that starts it, atomically. A limiter with
   * `blockDuration` on a store without it fails at creation.
   */
  readonly blocks?: boolean;
  /**
   * The store holds bans ({@link Store.ban}, {@link Store.unban}), read by the algorithms that check
   * blocks (`checksBlocks`: a lockout, or `withBans`) in the same step as their decision.
   */
  readonly bans?: boolean;
  /**
   * The algorithm kinds whose keys the store overrides ({@link Store.setOverride}): a configuration
   * kept in the store per key, read by the algorithms that check overrides (`checksOverrides`, through
   * `withOverrides`) in the same step as their decision. Absent: none.
   */
  readonly overrides?: readonly Algorithm['kind'][];
  /**
   * The store runs reservations (`charge` with a `maxDelayMs`, and `giveBack` with the reservation's
   * `delayMs`) for every rate algorithm it lists. A limiter's `reserve` on a store without it throws
   * `UnsupportedError`.
   */
  readonly reservations?: boolean;
  /**
   * The store settles charges at their real cost ({@link Store.settle}) for every rate algorithm it
   * lists. A limiter's `settle` on a store without it throws `UnsupportedError`.
   */
  readonly settle?: boolean;
  /**
   * The store runs idempotent charges (`charge` with an {@link IdempotentCharge}, `giveBack` with its
   * id) for every rate algorithm it lists. A limiter given an idempotency key on a store without it
   * throws `UnsupportedError`.
   */
  readonly idempotency?: boolean;
}

/** Characters of an idempotency id's digest, and of a fingerprint's (see {@link IdempotentCharge}). */
export const IDEMPOTENCY_ID_LENGTH = 16;
export const IDEMPOTENCY_FINGERPRINT_LENGTH = 8;
/** The largest {@link IdempotentCharge.maxReplays}: a store may keep a record's count of replays in 16 bits. */
export const MAX_IDEMPOTENCY_REPLAYS = 1_000;

/**
 * An idempotent charge (see {@link Store.charge}): the request's id and fingerprint, each digested to
 * a fixed length of base64url characters ({@link IDEMPOTENCY_ID_LENGTH}, {@link
 * IDEMPOTENCY_FINGERPRINT_LENGTH}), and how long and how many per key the store remembers decisions.
 */
export interface IdempotentCharge {
  readonly id: string;
  readonly fingerprint: string;
  /** How long an admitting decision is remembered, in ms (at least 1). */
  readonly ttlMs: number;
  /** The most ids remembered per key and algorithm kind; a new one beyond it forgets the oldest. */
  readonly maxIds: number;
  /**
   * The most times one remembered decision is answered again (an integer from 1 to {@link
   * MAX_IDEMPOTENCY_REPLAYS}): the retry after that is charged as a new request, and remembered
   * afresh (its count back at 0) when admitted.
   */
  readonly maxReplays: number;
}

/** A key's override as a store holds it (see {@link Store.getOverride}). */
export interface StoredOverride {
  /** The configuration the key is decided with: an algorithm of the same kind as the limit's. */
  readonly algorithm: Algorithm;
  /** When it ends, in ms on the clock it was set with (the limiter's, or the store's own). */
  readonly expiresAt: number;
}

/**
 * One charge, as the limiter hands it to a store (see {@link Store.charge}): a record, so that a later
 * attribute of a charge is a field here, never one more parameter. Built once per charge and never
 * changed; a store may keep it until it answers (a batch), never after.
 */
export interface Charge {
  /** The full storage key (the limiter's prefix included). */
  readonly key: string;
  /**
   * The storage key's two parts, when the caller has them: `scope`, the limiter's key prefix (its
   * `prefix` and `:`, or '' without a prefix), and `local`, the caller's own key string, so that
   * `key === scope + local`. Both or neither. A store may index its keys by them (the memory store
   * looks the caller's own string up, not a new concatenation: see docs/design/stores.md); a store that
   * does treats a charge with them and one of the same `key` without them as one key. Absent: `key` alone.
   */
  readonly scope?: string;
  readonly local?: string;
  readonly algorithm: Algorithm;
  /** The units charged (`cost > 0`, checked by the caller: see `checkCost`). */
  readonly cost: number;
  /**
   * A reservation: the longest wait accepted, in ms, from 0 to the algorithm's `maxReserveMs` (only
   * stores that declare `capabilities.reservations` are given one). Absent: a consume, which cannot wait.
   */
  readonly maxDelayMs?: number;
  /** An idempotent charge (only stores that declare `capabilities.idempotency` are given one). */
  readonly idempotency?: IdempotentCharge;
  /**
   * In a {@link Store.chargeAll}: `false` for a dry-run limit, charged but never enforced (its denial
   * does not stop the others). Absent: enforced. A charge alone ignores it.
   */
  readonly enforced?: boolean;
}

/**
 * What a charge took from the store, as the store says it (see {@link Charged.took}):
 * - `'charged'`: the step ran and recorded what the decision says (an admission took the cost; a
 *   denial took nothing, or what the algorithm records of a denial);
 * - `'rolled-back'`: admitted, then given back in the same atomic step because a later enforced charge
 *   of its {@link Store.chargeAll} denied (or would hold the request past `holdMs`);
 * - `'not-asked'`: a charge of a {@link Store.chargeAll} after an enforced denial, never decided (its
 *   decision is an empty denial that reports nothing);
 * - `'replayed'`: an idempotent charge answered by the remembered decision of an earlier one, charging
 *   nothing (the decision is allowed, with the original's `at` and slot, and the numbers of now).
 *
 * (The limiter adds two of its own on the way back: a quota lease's units, and a decision made without
 * the store.)
 */
export type ChargeTook = 'charged' | 'rolled-back' | 'not-asked' | 'replayed';

/** The answer to one {@link Charge}: the decision, and what the charge took (a record, not marks beside the decision). */
export interface Charged {
  readonly decision: Decision;
  readonly took: ChargeTook;
  /** An idempotent charge whose id was remembered with another fingerprint: decided and charged as a new request. */
  readonly conflict?: boolean;
  /**
   * The id ({@link IdempotentCharge.id}) the store remembered this admitting decision under: a
   * give-back passes it on to forget it. Absent for a replay, a conflict (the record is the first
   * request's), a denial, and a charge that was not idempotent.
   */
  readonly idempotencyId?: string;
}

/** A charge and the time it is decided at (see {@link Store.charge}'s `now`), for {@link Store.chargeAll}. */
export interface TimedCharge {
  readonly charge: Charge;
  readonly now: number | undefined;
}

/** The options of {@link Store.chargeAll}. */
export interface ChargeAllOptions {
  /** The longest an enforced charge may hold the request (its decision's `delayMs`), in ms; `Infinity`: no bound. */
  readonly holdMs: number;
}

/**
 * Units given back (see {@link Store.giveBack}): a record, as {@link Settlement} is.
 */
export interface GiveBack {
  /** The full storage key. */
  readonly key: string;
  /** The storage key's parts, when the caller has them: as {@link Charge.scope} and {@link Charge.local}. */
  readonly scope?: string;
  readonly local?: string;
  readonly algorithm: Algorithm;
  /** The units given back (`cost > 0`). */
  readonly cost: number;
  /**
   * The charge's {@link Decision.at}: the store gives back only to the window the request was charged
   * in, never raising the balance above what it would be had the request not been charged (the
   * algorithm's `undo` says how). Absent: the older rollback right after a charge.
   */
  readonly chargedAt?: number;
  /**
   * With `chargedAt`: the reservation's {@link Decision.delayMs}, a cancel, which gives back to the
   * reservation's slot (a store without `capabilities.reservations` is never given one). Absent or 0: none.
   */
  readonly delayMs?: number;
  /** The charge's {@link Charged.idempotencyId}: its remembered decision is forgotten in the same step, so a retry of a request given back is decided afresh. */
  readonly idempotencyId?: string;
}

/**
 * A store applies one algorithm step to one key atomically: no other decision for that key can
 * interleave between reading the state and writing it back. There is no get-then-set in any caller.
 *
 * `now` (ms) is the time of the decision when the limiter has an explicit clock; when `undefined`
 * the store uses its own clock (the memory store its default clock, the Redis store Redis `TIME`).
 * Callers validate `cost` before calling (see `checkCost`); a store never sees a bad cost.
 * The key is the full storage key (prefix included); the store keeps different algorithm kinds
 * apart, and applies a changed configuration of the same kind to existing state (balances clamped).
 */
export interface Store {
  readonly capabilities: StoreCapabilities;
  /**
   * Decides and records `charge.cost` units (`cost > 0`): the one charge of a store, in one atomic step
   * of the algorithm (`step(…, maxDelay)`). Without `maxDelayMs` a consume: the request cannot wait.
   * With `maxDelayMs` (from 0 to the algorithm's `maxReserveMs`; only stores that declare
   * `capabilities.reservations` are given one) a reservation: the units are taken now for the
   * earliest slot at most `maxDelayMs` ahead, and the decision's `delayMs` is the wait until it;
   * denied, nothing is taken. Answers `took: 'charged'` except for the replay below.
   *
   * With `idempotency` (only stores that declare `capabilities.idempotency` are given one) the same
   * atomic step, once the key's block is read, looks for the id among the key's remembered decisions
   * (per key and algorithm kind, for `ttlMs`): one of the same fingerprint that has been answered
   * again fewer than `maxReplays` times is answered again and nothing is charged (`took:
   * 'replayed'`: allowed, its `at` and the slot of the original, the numbers of now; the record counts
   * the replay); one of another fingerprint leaves the charge as any other (`conflict: true`); one that
   * has used its replays leaves it as any other too. An admitting decision that is not a replay nor a
   * conflict is remembered under the id (`idempotencyId` set; a denial never is: a retry of a denied
   * request is decided afresh), its count of replays at 0, replacing the id's spent record, at most
   * `maxIds` per key, the oldest forgotten first. While the key is blocked (a lockout, a ban: an
   * algorithm that `checksBlocks`) the charge gets the block's denial as any charge does, its id
   * neither looked up nor written: a ban or a lockout outranks a replay, and the record is kept as it
   * was, so that a retry once the block ends (or is lifted) replays.
   */
  charge(charge: Charge, now: number | undefined): MaybePromise<Charged>;
  /** Decides for `cost` units (0 allowed) and records nothing. */
  peek(key: string, algorithm: Algorithm, cost: number, now: number | undefined): MaybePromise<Decision>;
  /**
   * Gives back `back.cost` units admitted by an earlier {@link charge} (a rollback when a combined
   * limit denies, a response whose outcome is not counted, a reservation's cancel): see {@link GiveBack}
   * for where they go. Every store applies the algorithm's `undo` alike.
   */
  giveBack(back: GiveBack, now: number | undefined): MaybePromise<void>;
  /**
   * Settles a charge of an earlier {@link charge} at the request's real cost, in one atomic step of the
   * algorithm (its `settle`, see `Settlement`): the difference is given back or charged, in the window
   * the request was charged in, never denied, never past `settlement.maxDebt`. Only stores that
   * declare `capabilities.settle` have it; callers pass a rate algorithm and `actual !== cost`.
   */
  settle?(key: string, algorithm: Algorithm, settlement: Settlement, now: number | undefined): MaybePromise<void>;
  /**
   * Bans `key` for this algorithm's state kind for `durationMs` from `now` (the store's clock when
   * undefined): its block (a lockout's place) is set to end then, marked a ban, replacing any block.
   * An algorithm that checks blocks then denies it without charging, with the reason `'blocked'` and
   * the ban's remaining time as its retry. Only stores that declare `capabilities.bans` have it.
   */
  ban?(key: string, algorithm: Algorithm, durationMs: number, now: number | undefined): MaybePromise<void>;
  /**
   * Lifts `key`'s ban (or lockout) for this algorithm's state kind, its state kept; every process's
   * deny cache forgets the key, as after a reset ({@link Store.watchResets}).
   */
  unban?(key: string, algorithm: Algorithm): MaybePromise<void>;
  /**
   * Decides `key`'s state of this algorithm's kind with `override` (a configuration of that kind,
   * without a lockout) until `ttlMs` from `now` (the store's clock when undefined), in every decision
   * of an algorithm that checks overrides (`checksOverrides`), in the same step: the state is kept and
   * read as a changed configuration is (balances clamped). Replaces an earlier override. Only stores
   * whose `capabilities.overrides` lists the kind have it.
   */
  setOverride?(key: string, override: Algorithm, ttlMs: number, now: number | undefined): MaybePromise<void>;
  /** `key`'s live override for this algorithm's kind, or undefined (`now`: as for {@link Store.setOverride}). */
  getOverride?(key: string, algorithm: Algorithm, now: number | undefined): MaybePromise<StoredOverride | undefined>;
  /** Removes `key`'s override for this algorithm's kind: its next decision is the limit's own again. */
  clearOverride?(key: string, algorithm: Algorithm): MaybePromise<void>;
  /** Forgets the key's state for this algorithm kind (and its block): the next request starts fresh. */
  reset(key: string, algorithm: Algorithm): MaybePromise<void>;
  /** Takes a concurrency permit named `leaseId` when one is free. */
  acquire(
    key: string,
    algorithm: ConcurrencyAlgorithm,
    leaseId: string,
    now: number | undefined,
  ): MaybePromise<Decision>;
  /** Returns a permit; releasing an unknown or expired lease does nothing. */
  release(key: string, algorithm: ConcurrencyAlgorithm, leaseId: string): MaybePromise<void>;
  /**
   * The unit that fails together with `key`'s state for this algorithm: the limiter keeps one
   * store-down circuit (and one probe) per domain, so a failed part of the store (a Cluster master)
   * fails only its own keys while the others keep answering. Called on every store call of a limiter,
   * so it must be cheap, synchronous, and never throw; equal values mean one domain. A domain may
   * change over time (a failover moves a slot to another node): the next call simply uses the new
   * domain's circuit. A store without this method is one domain.
   */
  failureDomain?(key: string, algorithm: Algorithm): string | number;
  /**
   * Tells `listener` the storage key of every key reset, banned, unbanned or overridden (set or
   * cleared) through a store on the same backend, in any process (this one too), so that what a
   * limiter remembers of that key (a cached denial, a quota lease's block) is forgotten everywhere. A
   * store in this process (`capabilities.local`; see `ResetListeners`) tells inside the control's own
   * call, so every limiter on it has forgotten when the call returns; a store several processes share
   * tells every process before the control call resolves where it can confirm it (the Redis store), else
   * soon after. A limiter with a deny cache registers once (at its first cached denial), and one with
   * quota leases once (at its first block). The store holds the listener weakly: it stops hearing once
   * the limiter is collected. `undefined` in place of a key means resets may have been missed (the
   * store's subscription has just connected, or connected again after a break): forget every key.
   * `hearing` (optional, for a store whose resets are confirmed, such as the Redis store): `false`
   * means the store cannot hear resets now (its subscription is not live yet, or has broken): forget
   * every key, and remember nothing until a call whose `hearing` is not `false` (`undefined` then: the
   * subscription is live again). A store may call the listener at once, from `watchResets`. A listener
   * that ignores `hearing` keeps working as before. Optional, but a store two limiters can share should
   * have it (the conformance suite checks it on every local store and every store that has it):
   * without it a control leaves other limiters' cached denials to expire by themselves (a remote store
   * whose client cannot subscribe).
   */
  watchResets?(listener: (storageKey: string | undefined, hearing?: boolean) => void): void;
  /**
   * Optional, for a store whose calls go through I/O: decides the charges of one request (its rate
   * limits, in order) together, in one atomic step where it can: charged in order until the first
   * denial of an enforced charge, and then none charged at all (what the earlier ones took is given
   * back in the same step: `took: 'rolled-back'`; the later ones are not asked: `'not-asked'`), nor
   * when an enforced charge would hold the request longer than `options.holdMs`. Charges it cannot
   * decide in that one step (a Cluster's other slots) are decided as alone; the caller gives back what
   * they took. Returns one answer per charge, in order, each settling (or failing) on its own, so that
   * each limit keeps its own timeout and failure policy; it never throws (a closed store rejects every
   * answer with its `StoreClosedError`). A local store needs none: a synchronous run
   * of charges and give-backs is already one step.
   */
  chargeAll?(charges: readonly TimedCharge[], options: ChargeAllOptions): readonly Promise<Charged>[];
  /** Stops timers and connections owned by the store. */
  close?(): MaybePromise<void>;
}
