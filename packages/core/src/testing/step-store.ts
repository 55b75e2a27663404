import {
  ALGORITHM_KINDS,
  type Algorithm,
  type AlgorithmKind,
  type ConcurrencyAlgorithm,
  type LeaseState,
  type Settlement,
  type StepRequest,
} from '../algorithm.js';
import { systemClock, type Clock } from '../clock.js';
import type { Decision } from '../decision.js';
import { UnsupportedError } from '../errors.js';
import { BlockTable } from '../store/blocks.js';
import type { Charge, Charged, GiveBack, Store, StoreCapabilities } from '../store/interface.js';
import { ResetListeners } from '../store/reset-listeners.js';
import { settleKey, stepKey, undoKey, type KeyState } from './key-state.js';

export interface StepStoreOptions {
  /** The algorithm kinds it declares in `capabilities.algorithms` and runs (default: all of them). */
  algorithms?: readonly AlgorithmKind[];
  /** Clock used when the limiter passes no `now` (default `Date.now`). */
  clock?: Clock;
  /** Whether it runs lockouts and declares `capabilities.blocks` (default true). */
  blocks?: boolean;
  /** Whether it runs reservations and declares `capabilities.reservations` (default true). */
  reservations?: boolean;
}

/**
 * The reference store: each algorithm's own step, run synchronously on one `Map` of states (no
 * eviction, no expiry, no sweep). Core runs the conformance suite on it, so the scenario tables run
 * with the algorithms they test; store authors can read it as the smallest store that passes (its
 * lockouts kept in a `BlockTable` beside the states, its resets told to the limiters' deny caches
 * through a `ResetListeners`). Any
 * kind outside `algorithms` is refused (`RL_UNSUPPORTED`), as by a store that does not run it.
 */
export class StepStore implements Store {
  readonly capabilities: StoreCapabilities;
  private readonly states = new Map<string, KeyState>();
  private readonly blocks = new BlockTable();
  /** The limiters' listeners (`watchResets`): a reset is told inside its call. */
  private readonly resets = new ResetListeners();
  private readonly clock: Clock;

  constructor(options: StepStoreOptions = {}) {
    this.capabilities = {
      local: true,
      algorithms: [...(options.algorithms ?? ALGORITHM_KINDS)],
      blocks: options.blocks ?? true,
      reservations: options.reservations ?? true,
      settle: true,
    };
    this.clock = options.clock ?? systemClock;
  }

  /** A consume, or with `maxDelayMs` a reservation (see `Store.charge`): always `took: 'charged'` (it runs no idempotency). */
  charge(charge: Charge, now: number | undefined): Charged {
    return {
      decision: this.decide(charge.key, charge.algorithm, {
        now: now ?? this.clock(),
        cost: charge.cost,
        commit: true,
        maxDelay: charge.maxDelayMs,
      }),
      took: 'charged',
    };
  }

  peek(key: string, algorithm: Algorithm, cost: number, now: number | undefined): Decision {
    return this.decide(key, algorithm, { now: now ?? this.clock(), cost, commit: false, maxDelay: undefined });
  }

  giveBack(back: GiveBack, now: number | undefined): void {
    undoKey(back.algorithm, this.states.get(this.slot(back.key, back.algorithm)), {
      now: now ?? this.clock(),
      cost: back.cost,
      chargedAt: back.chargedAt,
      delayMs: back.delayMs,
    });
  }

  settle(key: string, algorithm: Algorithm, settlement: Settlement, now: number | undefined): void {
    const slot = this.slot(key, algorithm);
    const state = settleKey(algorithm, this.states.get(slot), { now: now ?? this.clock(), ...settlement });
    if (state !== undefined) this.states.set(slot, state);
  }

  reset(key: string, algorithm: Algorithm): void {
    this.states.delete(this.slot(key, algorithm));
    this.blocks.lift(key, algorithm);
    this.resets.tell(key);
  }

  /** Tells `listener` of every reset, inside the reset's call (see `Store.watchResets`): a limiter's cached denial of a lifted lockout is forgotten at once. */
  watchResets(listener: (storageKey: string | undefined) => void): void {
    this.resets.listen(listener);
  }

  acquire(key: string, algorithm: ConcurrencyAlgorithm, leaseId: string, now: number | undefined): Decision {
    const slot = this.slot(key, algorithm);
    const { state, decision } = algorithm.acquire(
      this.states.get(slot) as LeaseState | undefined,
      now ?? this.clock(),
      leaseId,
      true,
    );
    this.states.set(slot, state);
    return decision;
  }

  release(key: string, algorithm: ConcurrencyAlgorithm, leaseId: string): void {
    (this.states.get(this.slot(key, algorithm)) as LeaseState | undefined)?.delete(leaseId);
  }

  /** The live leases of `key` under a concurrency limit (for tests that look at permits), or undefined. */
  leasesOf(key: string): LeaseState | undefined {
    return this.states.get(`concurrency\u0000${key}`) as LeaseState | undefined;
  }

  /** A decision of `request` (its `now` already the store's clock when the limiter has none), through the key's lockout. */
  private decide(key: string, algorithm: Algorithm, request: StepRequest): Decision {
    const slot = this.slot(key, algorithm);
    const step = (write: boolean): Decision => {
      const { decision, state } = stepKey(
        algorithm,
        this.states.get(slot),
        write === request.commit ? request : { ...request, commit: write },
      );
      if (state !== undefined) this.states.set(slot, state);
      return decision;
    };
    if (algorithm.blockMs === 0) return step(request.commit);
    const t = request.now;
    return (
      this.blocks.denial(key, algorithm, t, step) ??
      (request.commit ? this.blocks.recorded(key, algorithm, t, step(true)) : step(false))
    );
  }

  /** The state's name: kinds are kept apart, configurations of one kind share the state. */
  private slot(key: string, algorithm: Algorithm): string {
    if (!this.capabilities.algorithms.includes(algorithm.kind))
      throw new UnsupportedError(`This StepStore does not run the ${algorithm.kind} algorithm.`);
    return `${algorithm.kind}\u0000${key}`;
  }
}
