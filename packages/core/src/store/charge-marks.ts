import type { Decision } from '../decision.js';

/**
 * What a store says of a decision of a {@link ChargeGroup} that took nothing: an allowed consume given
 * back in the group's own atomic step (a later limit denied), or a consume the group never asked
 * (an earlier limit denied). The engine gives neither back, and a late answer of either is no grant.
 * Kept beside the decision (a weak set), not on it: a decision's shape is the same for every store.
 */
const rolledBack = new WeakSet<Decision>();
const notAsked = new WeakSet<Decision>();

/** Marks an allowed decision whose units were given back in its group's step. Returns it. */
export function markRolledBack(decision: Decision): Decision {
  rolledBack.add(decision);
  return decision;
}

/** Marks the decision of a consume its group never asked (it reports no quota and is not observed). Returns it. */
export function markNotAsked(decision: Decision): Decision {
  notAsked.add(decision);
  return decision;
}

/** True when `decision` took nothing from the store although it may say allowed (see {@link markRolledBack}, {@link markNotAsked}). */
export function tookNothing(decision: Decision): boolean {
  return rolledBack.has(decision) || notAsked.has(decision);
}

/** True for the decision of a consume its group never asked. */
export function wasNotAsked(decision: Decision): boolean {
  return notAsked.has(decision);
}

/** Decisions settled at their real cost, or given back (`undo`, `giveBackUnits`): a charge is settled once. */
const settled = new WeakSet<Decision>();

/** Marks `decision` settled; false when it was already (the caller then ignores the second settle). */
export function markSettled(decision: Decision): boolean {
  if (settled.has(decision)) return false;
  settled.add(decision);
  return true;
}

/** True once `decision` was settled or given back (see {@link markSettled}). */
export function wasSettled(decision: Decision): boolean {
  return settled.has(decision);
}
