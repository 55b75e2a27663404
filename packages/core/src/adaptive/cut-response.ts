/** Latency at most this share of where a run of cuts began counts as fallen: the queue answered the cuts. */
const FALLEN = 0.9;

/**
 * Whether the latency answers an adaptive limit's cuts. A queue of its own work falls as the work held
 * falls: past the backend's capacity, half the work held is about half the wait. A latency that stays
 * where it was while the work held by the windows the controller cut after halves is not a queue: the
 * backend itself got slower by less than `reprobeAbove` times (a service of 100 ms that now takes
 * 150), which the baseline no longer explains. Left alone, a gradient would cut such a limit to `min`
 * and keep it there (every window's latency above its target, at any concurrency): then the baseline
 * is measured again instead.
 *
 * Only windows judged by their latency count (none with failures: their cuts are the failures'). The
 * anchor of a run of cuts moves to the last window whose latency fell; a window the controller did not
 * cut after ends the run.
 */
export class CutResponse {
  private anchor: { readonly inFlight: number; readonly latencyMs: number } | undefined = undefined;

  /**
   * The controller cut the limit after a window whose work ran at up to `inFlight` permits with a
   * median latency of `latencyMs`: true when the work held has halved since the run of cuts began (or
   * since its latency last fell), or come down to `floor` (the limit's `min`: no cut goes further),
   * and its latency has not fallen.
   */
  unanswered(inFlight: number, latencyMs: number, floor: number): boolean {
    const anchor = this.anchor;
    if (anchor === undefined || latencyMs <= anchor.latencyMs * FALLEN) {
      this.anchor = { inFlight, latencyMs };
      return false;
    }
    return inFlight <= Math.max(anchor.inFlight / 2, floor);
  }

  /** The controller is cutting the limit (a run of cuts judged by their latency is under way). */
  get cutting(): boolean {
    return this.anchor !== undefined;
  }

  /** The run of cuts ended: the controller kept or raised the limit, or a new baseline was measured. */
  reset(): void {
    this.anchor = undefined;
  }
}
