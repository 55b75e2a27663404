import type { NumericAlgorithm, NumericState, SettleRequest } from '../algorithm.js';

/**
 * A settle below its estimate (`actual < cost`): gives `cost − actual` units of the charge back to the
 * stored state at `s[at]`, at `request.now`. Called only when a state is stored.
 */
export type GiveBack = (s: NumericState, at: number, request: SettleRequest) => void;

/**
 * A settle at or above its estimate (`actual ≥ cost`): adds `actual − cost` units more, taken whatever
 * the balance (a settle is never denied) and never past `request.maxDebt`. `fresh`: no state is
 * stored (the store made room for one): the overshoot writes it whole.
 */
export type Overshoot = (s: NumericState, at: number, fresh: boolean, request: SettleRequest) => void;

/**
 * A numeric algorithm's `settle` (see {@link NumericAlgorithm.settle}): below the estimate, `giveBack`
 * (nothing when no state is stored: there is nothing to give back to); at or above it, `overshoot`.
 * The Lua twins split a settle the same way (`settle_back` and `extra` in prelude-compact.lua).
 */
export function settleBy(giveBack: GiveBack, overshoot: Overshoot): NumericAlgorithm['settle'] {
  return (s, at, fresh, request) => {
    if (request.actual >= request.cost) overshoot(s, at, fresh, request);
    else if (!fresh) giveBack(s, at, request);
  };
}

/**
 * The give-back of the difference by `undo`: a charge of `cost − actual` units given back with the
 * time and delay of the settled charge, as a cancel of that charge would be (its last units, for an
 * algorithm whose units have no place in time; a leaky bucket's do: it gives back the tail of its slots).
 */
export function undoDifference(undo: NumericAlgorithm['undo']): GiveBack {
  return (s, at, { now, cost, actual, chargedAt, delayMs }) =>
    undo(s, at, { now, cost: cost - actual, chargedAt, delayMs });
}
