import type { DecisionEvent, Observer } from '../../observe/observer.js';

/**
 * What a limiter's observer hears of its idempotent charges (`DecisionEvent.idempotency`): the
 * suite's window on a replay or a conflict, which a limiter's decision does not carry (the store says
 * it in its `Charged` answer, and the limiter tells its observers). Give {@link observer} as the
 * limiter's `observer`; after each charge, {@link latest} is what its decision's event said.
 */
export class HeardIdempotency {
  /** What each decision event heard since the last read said, oldest first. */
  private readonly heard: DecisionEvent['idempotency'][] = [];

  /** The observer to give the limiter: it keeps each decision event's `idempotency`. */
  readonly observer: Observer = {
    decision: (event) => {
      this.heard.push(event.idempotency);
    },
  };

  /**
   * What the latest decision heard since the last read said (`'replayed'`, `'conflict'`, or undefined
   * for neither), the earlier ones dropped; throws when none was heard, so that a charge without its
   * event never passes for one that said nothing.
   */
  latest(): DecisionEvent['idempotency'] {
    if (this.heard.length === 0) throw new Error('No decision was heard since the last read.');
    return this.heard.splice(0).at(-1);
  }

  /** Whether the latest decision heard since the last read was a replay (see {@link latest}). */
  replayed(): boolean {
    return this.latest() === 'replayed';
  }
}
