import type { ClassOf } from './priority.js';

/** A permit of an adaptive limit: it measures its own time from acquire to release. */
export interface AdaptivePermit {
  /** The class of the work, as metrics label it. */
  readonly priority: string;
  /**
   * Ends the work: its latency is a sample of the limit, or with `failed: true` a failure (the work
   * failed or timed out: its latency is never a sample), or with `cancelled: true` nothing (the work
   * never reached the backend: a request given up before its handler ran). Only the first call
   * counts; one after `maxHold` (the permit was already counted failed) does nothing.
   */
  release(outcome?: PermitOutcome): void;
}

/** How the work of a permit ended (see {@link AdaptivePermit.release}); neither: it succeeded. */
export interface PermitOutcome {
  readonly failed?: boolean;
  readonly cancelled?: boolean;
}

/** What a {@link HeldPermit} is made of. */
export interface HeldPermitStart {
  readonly onEnd: (permit: HeldPermit, outcome: PermitOutcome | undefined) => void;
  readonly cls: ClassOf;
  readonly acquiredAt: number;
  readonly epoch: number;
  /** Permits held when it was acquired, itself included. */
  readonly inFlightAtStart: number;
  /** The limit's permit-ms held (permits held × time, summed) when it was acquired. */
  readonly heldAtStart: number;
}

/** A permit held: its class, when it was acquired, under which epoch and at what concurrency (then, and summed since). */
export class HeldPermit implements AdaptivePermit {
  private done = false;
  private readonly onEnd: HeldPermitStart['onEnd'];
  readonly priority: string;
  readonly acquiredAt: number;
  readonly epoch: number;
  readonly inFlightAtStart: number;
  readonly heldAtStart: number;

  constructor(start: HeldPermitStart) {
    this.onEnd = start.onEnd;
    this.priority = start.cls.label;
    this.acquiredAt = start.acquiredAt;
    this.epoch = start.epoch;
    this.inFlightAtStart = start.inFlightAtStart;
    this.heldAtStart = start.heldAtStart;
  }

  release(outcome?: PermitOutcome): void {
    if (this.done) return;
    this.done = true;
    this.onEnd(this, outcome);
  }
}
