import type { Charge, Charged, ChargeTook, MaybePromise } from '../store/interface.js';

/**
 * What a charge took, as the limiter's charge path answers it: what the store says ({@link ChargeTook}),
 * or `'leased'` (units of a quota lease's block, charged in the store earlier: a give-back goes to the
 * block while it lives) or `'nothing'` (decided without the store: the failure policy, the deny cache).
 */
export type AnswerTook = ChargeTook | 'leased' | 'nothing';

/**
 * What one stage of a limiter's charge path answers: the store's {@link Charged}, or one made on the
 * way (a cached denial, a quota lease's units, the failure policy's decision: `took` says which).
 */
export interface ChargeAnswer extends Omit<Charged, 'took'> {
  readonly took: AnswerTook;
  /**
   * Only on an admitting decision of the failure policy given after the store call timed out: the
   * request turned out not to be served (a later limit denied it, its client left), so what the
   * store grants late for it is given back (see `PendingCall.notServed`).
   */
  readonly unserved?: () => void;
}

/** The rest of a charge path below a stage: takes the charge on, and answers it. */
export type ChargeNext = (charge: Charge) => MaybePromise<ChargeAnswer>;

/**
 * One stage of a limiter's charge path (observation, quota leases, the deny cache, the guard), in
 * the one signature of every stage: it answers `charge` itself, or hands it (or a charge of its own)
 * to `next` and reads the answer on the way back, as a Koa middleware does with `await next()`.
 */
export type ChargeStage = (charge: Charge, next: ChargeNext) => MaybePromise<ChargeAnswer>;

/** Where the guard sends a charge: the store's own `charge`, or a grouped call of a request's charges (`Store.chargeAll`). */
export type StoreCall = (charge: Charge, now: number | undefined) => MaybePromise<Charged>;

/** `stages` (outermost first) in front of `last`: one {@link ChargeNext}, composed once. */
export function composeStages(stages: readonly ChargeStage[], last: ChargeNext): ChargeNext {
  let next = last;
  for (let i = stages.length - 1; i >= 0; i--) {
    const stage = stages[i]!;
    const inner = next;
    next = (charge) => stage(charge, inner);
  }
  return next;
}

/** An answer made without the store (`took: 'nothing'`): a cached denial, a decision of the failure policy. */
export function withoutStore(decision: Charged['decision']): ChargeAnswer {
  return { decision, took: 'nothing' };
}
