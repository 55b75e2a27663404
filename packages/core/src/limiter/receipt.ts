import type { Decision } from '../decision.js';
import type { AnswerTook, ChargeAnswer } from './charge-path.js';

/**
 * What a decision a limiter returned says of its charge (see {@link receiptOf}): what the charge
 * took, whether its idempotency id was another request's, and the id a give-back forgets.
 */
export interface ChargeReceipt {
  readonly took: AnswerTook;
  readonly conflict: boolean;
  readonly idempotencyId: string | undefined;
}

const RECEIPT = Symbol('rl.receipt');

/** A receipt, and whether its charge was settled or given back (once only: a later one is ignored). */
class Receipt implements ChargeReceipt {
  constructor(
    readonly took: AnswerTook,
    readonly conflict: boolean,
    readonly idempotencyId: string | undefined,
    public settled: boolean,
  ) {}
}

type Receipted = Decision & { [RECEIPT]?: Receipt };

const CHARGED: ChargeReceipt = Object.freeze({ took: 'charged', conflict: false, idempotencyId: undefined });
const NOTHING: ChargeReceipt = Object.freeze({ took: 'nothing', conflict: false, idempotencyId: undefined });

/**
 * The decision of `charged`, as a limiter's verb returns it. Only what its `reason` and the plain
 * case cannot say is carried (an idempotent charge's replay, conflict, or the id the store remembers
 * it under; units from a quota lease's block, which a settle in the store reaches as a change of the
 * block, not as a charge of its own): as a receipt on the decision itself, under a symbol and not
 * enumerable, so the documented shape of a decision is unchanged. Every other decision carries none
 * (the common case, and a cached denial, allocate nothing more): a decision with a `reason` took
 * nothing; one without took its units from the store.
 */
export function receipted(charged: ChargeAnswer): Decision {
  const { decision, took } = charged;
  const conflict = charged.conflict === true;
  if (took !== 'replayed' && took !== 'leased' && !conflict && charged.idempotencyId === undefined) return decision;
  attach(decision, new Receipt(took, conflict, charged.idempotencyId, false));
  return decision;
}

/**
 * What `decision` (returned by a limiter's `consume`, `consumeSync` or `reserve`) says of its charge:
 * `took` `'replayed'` for an idempotent retry answered by the first request's decision (nothing was
 * charged), `'nothing'` for a decision made without the store (it has a `reason`), else `'charged'`;
 * `conflict` for an idempotency key another request used with another fingerprint (charged as new).
 */
export function receiptOf(decision: Decision): ChargeReceipt {
  return (decision as Receipted)[RECEIPT] ?? (decision.reason === undefined ? CHARGED : NOTHING);
}

/** `decision`'s charge as a record (see {@link receiptOf}): what a give-back or a settle of it reads. */
export function chargedOf(decision: Decision): ChargeAnswer {
  const receipt = receiptOf(decision);
  return { decision, took: receipt.took, conflict: receipt.conflict, idempotencyId: receipt.idempotencyId };
}

/**
 * Records that `decision`'s charge is settled or given back, the first time: true then, false when it
 * already was (the caller ignores the second). A decision the caller froze cannot record it: each
 * settle of it is then taken as the first.
 */
export function settleOnce(decision: Decision): boolean {
  const receipt = (decision as Receipted)[RECEIPT];
  if (receipt !== undefined) {
    if (receipt.settled) return false;
    receipt.settled = true;
    return true;
  }
  attach(decision, plainReceipt(decision, true));
  return true;
}

/** True once `decision`'s charge was settled or given back (see {@link settleOnce}). */
export function isSettled(decision: Decision): boolean {
  return (decision as Receipted)[RECEIPT]?.settled === true;
}

/** A copy of `decision` with more fields (a reservation, with its `cancel`), carrying the same receipt: one charge, settled once through either. */
export function withReceiptOf<D extends Decision>(decision: Decision, copy: D): D {
  let receipt = (decision as Receipted)[RECEIPT];
  if (receipt === undefined) {
    receipt = plainReceipt(decision, false);
    attach(decision, receipt);
  }
  attach(copy, receipt);
  return copy;
}

/** The receipt of a decision that carried none (see {@link receiptOf}), `settled` or not. */
function plainReceipt(decision: Decision, settled: boolean): Receipt {
  return new Receipt(decision.reason === undefined ? 'charged' : 'nothing', false, undefined, settled);
}

function attach(decision: Decision, receipt: Receipt): void {
  if (Object.isExtensible(decision)) Object.defineProperty(decision, RECEIPT, { value: receipt, configurable: true });
}
