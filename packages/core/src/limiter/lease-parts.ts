import type { Algorithm } from '../algorithm.js';
import type { Clock } from '../clock.js';
import type { Decision, Policy } from '../decision.js';
import type { Charge, GiveBack, MaybePromise } from '../store/interface.js';
import type { ChargeAnswer, ChargeNext } from './charge-path.js';
import type { TimerHandle, Timers } from '../timers.js';
import type { FailureReason } from './circuit.js';

/**
 * What a limiter's quota leases (see `QuotaLeases`, a stage of its charge path) reach below them: the
 * path a block is charged on, the failure policy, the give-back, and the counts the observers hear.
 */
export interface LeaseParts {
  /** The limiter's local clock (ms). */
  readonly clock: Clock;
  readonly timers: Timers;
  /** How long no block is asked for after the store failed one (the limiter's `storeRetryInterval`). */
  readonly retryIntervalMs: number;
  /**
   * Charges a block (a charge of its units) in the store, through the deny cache and the guard, heard
   * by no observer as a decision; a failure gets no fallback (a decision with the failure's `reason`).
   */
  readonly blocks: ChargeNext;
  /** The failure policy's answer to a request's `charge` whose block the store failed for `reason` (the fallback charged, if any). */
  withoutStore(charge: Charge, reason: FailureReason): MaybePromise<ChargeAnswer>;
  /** Gives units back to the store; never rejects. */
  giveBack(back: GiveBack): MaybePromise<void>;
  /** Units taken from (`leased`) or given back to (`returned`) the shared quota. */
  counted(action: 'leased' | 'returned', units: number): void;
  /**
   * Whether the limiter may answer a request with a denial the store gave earlier (its deny cache is
   * on): a key whose block the store denied for want of quota is then denied here until the store
   * said a block would be there, instead of charging each request alone.
   */
  readonly deniesLocally: boolean;
  /**
   * The store's `watchResets`, when it has one: resets made anywhere, so that a block of a reset state
   * is not spent and a denial of it is not repeated (`hearing` false: resets cannot be heard now).
   */
  readonly watchResets: ((listener: (storageKey: string | undefined, hearing?: boolean) => void) => void) | undefined;
}

/** The store's answer to a key's block that says no block is there for now, repeated to the key's requests as a denial until its entry's `noBlockUntil`. */
export interface BlockDenial {
  /** When it came (local clock): its times count down from then. */
  readonly heardAt: number;
  readonly decision: Decision;
}

/** Units of one block still to spend, until `until` (local clock). */
export interface Block {
  left: number;
  readonly until: number;
  /** The store's time of the block's charge: a give-back's `chargedAt`, and the `at` of the decisions spent from it. */
  readonly at: number;
  /** True when `until` is the lease's ttl, before the algorithm ends the block itself: unused units are then given back. */
  readonly returnable: boolean;
}

/** The blocks of one key, under one configuration, and what the store said with the last. */
export interface LeaseEntry {
  readonly algorithm: Algorithm;
  readonly configuration: string;
  /** Live blocks, the first to end first. */
  blocks: Block[];
  /** The store's `remaining` after the last block (every block leased out excluded). */
  remaining: number;
  limit: number;
  policy: Policy;
  /** When the key's state resets (local clock), from the last block. */
  resetAt: number;
  /** The block asked for now, resolving to the store's answer (undefined: the call threw): one at a time per key. */
  fetching: Promise<ChargeAnswer | undefined> | undefined;
  /** The units of the block asked for now ({@link fetching}); 0 when none is: with the blocks' units left, never more than the lease's `units`. */
  asking: number;
  /** The units requested of the key since the last block was asked for (the asking request's included): at its answer, what a round trip's requests ask. */
  demand: number;
  /** The units left below which the next block is asked for before a request needs it (0: only once one does); set at each block's answer from {@link demand}. */
  askAheadBelow: number;
  /** No block is asked before this time (local): the last was denied or failed, or the shared quota is gone. */
  noBlockUntil: number;
  /**
   * The store's last answer to a block (a denial for want of quota, or a grant that left it short of
   * another), when the limiter denies locally ({@link LeaseParts.deniesLocally}): until
   * {@link noBlockUntil}, a request the blocks cannot serve is denied with its limit, policy and reset,
   * without a store call. Undefined otherwise.
   */
  denial: BlockDenial | undefined;
  /**
   * The units of the next block, when the store said fewer are left than a block and that they lapse
   * unless taken (a window's rest): a block of what is there. 0: none.
   */
  restAsk: number;
  /** The store's retry time (ms) at the key's last block denial for want of quota; 0 once a block left another to spare. */
  pacedMs: number;
  timer: TimerHandle | undefined;
  /**
   * Why the entry is no longer the key's: `forgotten` (its state was reset: a block granted later
   * belongs to the old state and is dropped), `dropped` (closed, a plan changed: a block granted
   * later goes back to the store).
   */
  gone: 'forgotten' | 'dropped' | undefined;
}
