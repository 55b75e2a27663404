import { checkOptions, positiveNumber } from '../options.js';
import { InvalidOptionError } from '../errors.js';

/**
 * What an adaptive limit tells its controller once per window (see `AdaptiveConcurrencyOptions.window`)
 * in which work started since the limit last changed has finished: the controller only ever judges
 * a limit by work that ran under it.
 */
export interface LatencyWindow {
  /** The limit now (a real number; the permits are its floor, at least `min`). */
  readonly limit: number;
  /** The baseline: the backend's unloaded latency in ms, as the last probe measured it. */
  readonly minLatencyMs: number;
  /** The median latency in ms of the work that succeeded in the window. Undefined when only failures finished. */
  readonly latencyMs: number | undefined;
  /** Work that succeeded in the window (its latencies make {@link latencyMs}). */
  readonly samples: number;
  /** Work that failed in the window: `release({ failed: true })`, or a permit never released within `maxHold`. */
  readonly failures: number;
  /**
   * The most permits held when the window's work started: the concurrency its latencies were measured
   * at. A limit never reached is no evidence that a larger one is safe.
   */
  readonly peakInFlight: number;
  /**
   * The permits held while the window's work ran (on average over its latencies) and when the window
   * closed; undefined when no latency was measured. Work that ran at fewer permits than are held now
   * understates the latency now.
   */
  readonly concurrency?: WindowConcurrency;
}

/** The permits held while a window's work ran, and now ({@link LatencyWindow.concurrency}). */
export interface WindowConcurrency {
  /** The permits held on average while the work ran: permit-ms held over its latencies, summed. */
  readonly ran: number;
  /** The permits held when the window closed. */
  readonly now: number;
}

/**
 * The seam of an adaptive limit: from one window of measurements, the next limit. The adaptive limit
 * clamps the answer to `[min, max]`, measures the baseline (its probes) and gates the windows; a
 * controller only computes. A controller may keep state (slow start): give each limit its own.
 */
export interface LimitController {
  /** A name for observers and reports (`gradient`, `aimd`). */
  readonly name: string;
  /** The next limit (any finite number; clamped by the caller). */
  next(window: LatencyWindow): number;
  /** A probe measured a new baseline: a controller with a slow start starts it again. */
  rebase?(): void;
}

/** The options of {@link gradientController}. */
export interface GradientOptions {
  /**
   * How much latency above the baseline is tolerated as normal, as a fraction (default 0.25, Envoy's
   * buffer: below it, the noise of real latencies would read as queueing): the target
   * latency is `baseline × (1 + tolerance)`, and the limit settles where the backend's latency meets it.
   */
  tolerance?: number;
  /** What a window with failures multiplies the limit by (default 0.9), in (0, 1). */
  backoff?: number;
}

/**
 * The default controller, Envoy's and Netflix's gradient: `limit × target / latency`, the gradient
 * bounded to [0.5, 2] per window. Latency at the target keeps the limit; queueing above it shrinks it
 * in proportion. Past the target, work that ran while fewer permits were held than now (the first to
 * complete after the load ramped up) reads as latency × held now / held while it ran: past the
 * backend's capacity latency grows with the work held. That deepens a cut the latency called for; a
 * limit whose work met the target is never cut for it. Until the first sign of queueing after a new
 * baseline it doubles the concurrency it measured per round trip (a slow start, as TCP's), so that a
 * backend whose latency stepped is back at its capacity in a few round trips rather than tens; after
 * that it grows by the gradient (at most `1 + tolerance` per round trip). A limit never filled to half
 * (rounded down: the `sheddable` share, all that class can fill) is not grown (no evidence it is safe). A
 * window with failures backs off by `backoff`.
 */
export function gradientController(options: GradientOptions = {}): LimitController {
  const o = checkOptions(options, ['tolerance', 'backoff'], 'gradientController');
  const tolerance = o.tolerance === undefined ? 0.25 : fraction(o.tolerance, 'gradientController.tolerance', false);
  const backoff = o.backoff === undefined ? 0.9 : fraction(o.backoff, 'gradientController.backoff', true);
  let slowStart = true;
  return {
    name: 'gradient',
    next(w) {
      if (w.failures > 0) {
        slowStart = false;
        return w.limit * backoff;
      }
      if (w.latencyMs === undefined) return w.limit;
      const measured = (w.minLatencyMs * (1 + tolerance)) / Math.max(w.latencyMs, 1e-9);
      // Past the target, work that ran at fewer permits than are held now says the queue now is longer still.
      const gradient = Math.min(2, Math.max(0.5, measured < 1 ? measured / heldSince(w) : measured));
      if (gradient <= 1) {
        // At the target the limit is right; past it, the queue says the slow start is over.
        if (gradient < 1) slowStart = false;
        return w.limit * gradient;
      }
      if (!filledToHalf(w)) return w.limit;
      // A slow start doubles what was measured, not the limit: work that started at a lower concurrency says nothing of twice the limit.
      return slowStart ? Math.min(w.limit, w.peakInFlight) * 2 : w.limit * gradient;
    },
    rebase() {
      slowStart = true;
    },
  };
}

/**
 * The window's work started with half the limit held, rounded down, or more: evidence that a larger
 * limit may be safe. Rounded down because `sheddable` work (share 0.5) stops there, and a limit it
 * alone fills must still grow.
 */
function filledToHalf(w: LatencyWindow): boolean {
  return w.peakInFlight >= Math.floor(w.limit / 2);
}

/**
 * How many times the permits held now exceed those the window's work ran at (never below 1: work that
 * ran at more permits than now is judged as measured). Used when that work queued past the target:
 * the backend was past its capacity, where its throughput is constant and latency grows with the work
 * held (Little's law). After a ramp, the first work to complete ran at a fraction of the permits held
 * by then: its latency is that of the queue it saw, not of the queue now.
 */
function heldSince(w: LatencyWindow): number {
  const c = w.concurrency;
  if (c === undefined || c.ran <= 0) return 1;
  return Math.max(1, c.now / c.ran);
}

/** The options of {@link aimdController}. */
export interface AimdOptions {
  /** Latency above `baseline × (1 + tolerance)` counts as a drop (default 1: twice the baseline). */
  tolerance?: number;
  /** What a drop multiplies the limit by (default 0.9), in (0, 1). */
  backoff?: number;
  /** What a window without a drop adds to a limit it filled to half (default 1). */
  increase?: number;
}

/**
 * Netflix's AIMD: add `increase` per window without a drop, multiply by `backoff` on one (a failure,
 * or latency past the tolerance). Simple and robust, slower to find the capacity than the gradient.
 */
export function aimdController(options: AimdOptions = {}): LimitController {
  const o = checkOptions(options, ['tolerance', 'backoff', 'increase'], 'aimdController');
  const tolerance = o.tolerance === undefined ? 1 : positiveNumber(o.tolerance, 'aimdController.tolerance');
  const backoff = o.backoff === undefined ? 0.9 : fraction(o.backoff, 'aimdController.backoff', true);
  const increase = o.increase === undefined ? 1 : positiveNumber(o.increase, 'aimdController.increase');
  return {
    name: 'aimd',
    next(w) {
      const slow = w.latencyMs !== undefined && w.latencyMs > w.minLatencyMs * (1 + tolerance);
      if (w.failures > 0 || slow) return w.limit * backoff;
      return filledToHalf(w) ? w.limit + increase : w.limit;
    },
  };
}

/** A number in (0, 1) (`open`: exclusive of 1) or (0, 1]. */
function fraction(value: unknown, field: string, open: boolean): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || (open ? value >= 1 : value > 1))
    throw new InvalidOptionError(field, value, `a number greater than 0 and ${open ? 'below 1' : 'at most 1'}`);
  return value;
}

/** `value` as a {@link LimitController}, or an `InvalidOptionError` naming `field`. */
export function checkController(value: unknown, field: string): LimitController {
  const c = value as LimitController | null;
  if (c === null || typeof c !== 'object' || typeof c.next !== 'function' || typeof c.name !== 'string')
    throw new InvalidOptionError(
      field,
      value,
      'a controller with a name and next(window), such as gradientController() or aimdController()',
    );
  return c;
}
