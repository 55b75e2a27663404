import type { Decision } from '../decision.js';

/**
 * What a store says of a decision of a {@link ChargeGroup} that took nothing: an allowed consume given
 * back in the group's own atomic step (a later limit denied), or a consume the group never asked
 * (an earlier limit denied). The engine gives neither back, and a late answer of either is no grant.
 * Kept beside the decision (a weak set), not on it: a decision's shape is the same for every store.
 */
const rolledBack = new WeakSet<Decision>();
const notAsked = new WeakSet<Decision>();
const replayed = new WeakSet<Decision>();
const conflicts = new WeakSet<Decision>();
/** The idempotency id each idempotent charge was made with: its give-back forgets it (see `Store.undo`). */
const idempotencyIds = new WeakMap<Decision, string>();

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

/** True when `decision` took nothing from the store although it may say allowed (see {@link markRolledBack}, {@link markNotAsked}, {@link markReplayed}). */
export function tookNothing(decision: Decision): boolean {
  return rolledBack.has(decision) || notAsked.has(decision) || replayed.has(decision);
}

/** Marks the decision of an idempotent charge that answered an earlier one again (it charged nothing). Returns it. */
export function markReplayed(decision: Decision): Decision {
  replayed.add(decision);
  return decision;
}

/** True for the replay of an earlier decision (see `Store.consume`'s idempotency). */
export function wasReplayed(decision: Decision): boolean {
  return replayed.has(decision);
}

/** Marks the decision of an idempotent charge whose id was remembered with another fingerprint (decided and charged as new). Returns it. */
export function markConflict(decision: Decision): Decision {
  conflicts.add(decision);
  return decision;
}

/** True for a charge whose idempotency id was reused by another request. */
export function wasConflict(decision: Decision): boolean {
  return conflicts.has(decision);
}

/** Remembers the idempotency id `decision`'s charge was made with. */
export function markIdempotent(decision: Decision, id: string): void {
  idempotencyIds.set(decision, id);
}

/** The idempotency id of `decision`'s charge, if it was idempotent. */
export function idempotencyIdOf(decision: Decision): string | undefined {
  return idempotencyIds.get(decision);
}

/** True for the decision of a consume its group never asked. */
export function wasNotAsked(decision: Decision): boolean {
  return notAsked.has(decision);
}

/** Decisions settled at their real cost, or given back (`undo`, `giveBackUnits`): a charge is settled once. */
const settled = new WeakSet<Decision>();
/** The decision a copy was made of (a reservation with its `cancel()`, see {@link carryMarks}): one charge, settled once through either. */
const origins = new WeakMap<Decision, Decision>();

/** Marks `decision` (or the one it is a copy of) settled; false when it was already (the caller then ignores the second settle). */
export function markSettled(decision: Decision): boolean {
  const charge = origins.get(decision) ?? decision;
  if (settled.has(charge)) return false;
  settled.add(charge);
  return true;
}

/** True once `decision` (or the one it is a copy of) was settled or given back (see {@link markSettled}). */
export function wasSettled(decision: Decision): boolean {
  return settled.has(origins.get(decision) ?? decision);
}

/** `copy` (a copy of `decision` with more fields, a reservation) with `decision`'s marks; returns it. */
export function carryMarks<D extends Decision>(decision: Decision, copy: D): D {
  if (rolledBack.has(decision)) rolledBack.add(copy);
  if (notAsked.has(decision)) notAsked.add(copy);
  if (replayed.has(decision)) replayed.add(copy);
  if (conflicts.has(decision)) conflicts.add(copy);
  const id = idempotencyIds.get(decision);
  if (id !== undefined) idempotencyIds.set(copy, id);
  origins.set(copy, origins.get(decision) ?? decision);
  return copy;
}
