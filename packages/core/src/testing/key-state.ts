import type { Algorithm, LeaseState, LogState, SettleRequest, StepRequest, UndoRequest } from '../algorithm.js';
import type { Decision } from '../decision.js';

/** What a store keeps for one key: `stateSize` numbers, a log, or leases, by the algorithm's `stateKind`. */
export type KeyState = number[] | LogState | LeaseState;

/** One step on one key: its decision, and the state to keep (`undefined` while the key has none). */
export interface KeyStep {
  readonly decision: Decision;
  readonly state: KeyState | undefined;
}

/**
 * One decision of `algorithm` for `request.cost` units at `request.now` on one key's `state`
 * (`undefined`: no state yet), through the algorithm's own step: the new state when `request.commit`,
 * nothing written otherwise. A concurrency algorithm reports the permits in use (it takes leases
 * through `acquire`, not costs). This is the whole of a store's work for one key, without keys, expiry
 * or atomicity.
 */
export function stepKey(algorithm: Algorithm, state: KeyState | undefined, request: StepRequest): KeyStep {
  if (algorithm.stateKind === 'numeric') {
    const numbers = (state as number[] | undefined) ?? new Array<number>(algorithm.stateSize).fill(0);
    const decision = algorithm.step(numbers, 0, state === undefined, request);
    return { decision, state: request.commit ? numbers : state };
  }
  if (algorithm.stateKind === 'log') {
    const stepped = algorithm.step(state as LogState | undefined, request);
    return { decision: stepped.decision, state: request.commit ? stepped.state : state };
  }
  return { decision: algorithm.acquire(state as LeaseState | undefined, request.now, '', false).decision, state };
}

/** Gives back `back.cost` units admitted earlier on this key, charged at `back.chargedAt` when given (a rate algorithm's `undo`); leases have nothing to give back. */
export function undoKey(algorithm: Algorithm, state: KeyState | undefined, back: UndoRequest): void {
  if (state === undefined) return;
  if (algorithm.stateKind === 'numeric') algorithm.undo(state as number[], 0, back);
  else if (algorithm.stateKind === 'log') algorithm.undo(state as LogState, back);
}

/**
 * Settles a charge on this key at its real cost (a rate algorithm's `settle`), as a store does: a
 * state is made for a charge above the estimate when the key has none. Returns the state to keep.
 */
export function settleKey(
  algorithm: Algorithm,
  state: KeyState | undefined,
  request: SettleRequest,
): KeyState | undefined {
  if (algorithm.stateKind === 'numeric') {
    if (state === undefined && request.actual <= request.cost) return state;
    const numbers = (state as number[] | undefined) ?? new Array<number>(algorithm.stateSize).fill(0);
    algorithm.settle(numbers, 0, state === undefined, request);
    return numbers;
  }
  if (algorithm.stateKind === 'log' && state !== undefined) algorithm.settle(state as LogState, request);
  return state;
}

/** The time (ms) at which the key's state is the same as no state; `-Infinity` when it has none. */
export function keyExpiresAt(algorithm: Algorithm, state: KeyState | undefined): number {
  if (state === undefined) return -Infinity;
  if (algorithm.stateKind === 'numeric') return algorithm.expiresAt(state as number[], 0);
  if (algorithm.stateKind === 'log') return algorithm.expiresAt(state as LogState);
  return algorithm.expiresAt(state as LeaseState);
}
