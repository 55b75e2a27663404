import { parseTimerDuration, type Duration } from '../duration.js';
import { InvalidOptionError } from '../errors.js';
import { checkOptions, integerAtLeast, isPrintableAscii, MAX_COUNT } from '../options.js';
import { checkTimers, systemTimers, type Timers } from '../timers.js';
import { checkController, gradientController, type LimitController } from './controller.js';
import { PriorityClasses, type PriorityShares } from './priority.js';

/** The options of {@link adaptiveConcurrency}. */
export interface AdaptiveConcurrencyOptions {
  /**
   * The fewest permits, an integer of at least 1 (default 1): the limit never goes below, and a probe
   * runs at it, reading the latency there as the backend's unloaded one: give it at or under the
   * backend's capacity in flight.
   */
  min?: number;
  /** The most permits, an integer of at least `min` (default 1000). */
  max?: number;
  /**
   * The limit before anything is measured, between `min` and `max` (default `min(max, max(min, 20))`).
   * The first probe runs at it; when the work it measured started with more than `min` permits held
   * (a load at start-up), the baseline is measured again at `min`.
   */
  initial?: number;
  /** Computes the next limit from a window of measurements (default `gradientController()`; see `LimitController`). */
  controller?: LimitController;
  /** How often the limit may change, at most: a window of measurements (default 100 ms). */
  window?: Duration;
  /**
   * How often the baseline may be measured again (default 60 s, Envoy's `min_rtt_calc_interval`): for
   * one round trip the limit is `min`, and the median latency of `probeSamples` pieces of work started
   * then is the backend's unloaded latency. A due probe runs when a window's latency is above 1.5 × the
   * baseline (a settled limit holds it at the target, 1.25 ×: no probe then). A probe also starts as
   * soon as the running work's median age or a window's latency is `reprobeAbove` times the baseline
   * (the backend itself slowed down, not its queue), when the latency does not fall with the
   * controller's cuts (a backend slower by less), and when a window is a tenth faster than the baseline.
   */
  probeInterval?: Duration;
  /** The work a probe measures (default 10), an integer of at least 1. */
  probeSamples?: number;
  /** A window's latency past this many times the baseline starts a probe at once (default 3), a number above 1. */
  reprobeAbove?: number;
  /** A permit not released within this counts as failed work and is freed (default 60 s): its holder died. */
  maxHold?: Duration;
  /** The shares of the named classes of `Priority` (default normal 0.9, sheddable 0.5; critical is 1). */
  shares?: PriorityShares;
  /** Where the time comes from (default Node's timers; tests pass `FakeTimers` from `@rl/core/simulation`). */
  timers?: Timers;
  /** The limit's name in observer events and metrics (default `adaptive`), printable ASCII. */
  name?: string;
}

/** The options as parsed once. */
export interface AdaptiveConfig {
  readonly min: number;
  readonly max: number;
  readonly initial: number;
  readonly controller: LimitController;
  readonly windowMs: number;
  readonly probeIntervalMs: number;
  readonly probeSamples: number;
  readonly reprobeAbove: number;
  readonly maxHoldMs: number;
  readonly classes: PriorityClasses;
  readonly timers: Timers;
  readonly name: string;
}

const OWNER = 'adaptiveConcurrency';
const FIELDS = [
  'min',
  'max',
  'initial',
  'controller',
  'window',
  'probeInterval',
  'probeSamples',
  'reprobeAbove',
  'maxHold',
  'shares',
  'timers',
  'name',
];

/** Parses {@link AdaptiveConcurrencyOptions}: a bad one is an `InvalidOptionError` naming it. */
export function parseAdaptiveOptions(options: AdaptiveConcurrencyOptions): AdaptiveConfig {
  const o = checkOptions(options, FIELDS, OWNER);
  const min = o.min === undefined ? 1 : permits(o.min, `${OWNER}.min`);
  const max = o.max === undefined ? Math.max(min, 1000) : permits(o.max, `${OWNER}.max`);
  if (max < min) throw new InvalidOptionError(`${OWNER}.max`, max, `an integer of at least min (${min})`);
  const initial = o.initial === undefined ? Math.min(max, Math.max(min, 20)) : permits(o.initial, `${OWNER}.initial`);
  if (initial < min || initial > max)
    throw new InvalidOptionError(`${OWNER}.initial`, initial, `an integer from min (${min}) to max (${max})`);
  const reprobeAbove = o.reprobeAbove === undefined ? 3 : (o.reprobeAbove as number);
  if (typeof reprobeAbove !== 'number' || !Number.isFinite(reprobeAbove) || reprobeAbove <= 1)
    throw new InvalidOptionError(`${OWNER}.reprobeAbove`, o.reprobeAbove, 'a finite number above 1');
  return Object.freeze({
    min,
    max,
    initial,
    controller:
      o.controller === undefined ? gradientController() : checkController(o.controller, `${OWNER}.controller`),
    windowMs: o.window === undefined ? 100 : parseTimerDuration(o.window, `${OWNER}.window`),
    probeIntervalMs:
      o.probeInterval === undefined ? 60_000 : parseTimerDuration(o.probeInterval, `${OWNER}.probeInterval`),
    probeSamples: o.probeSamples === undefined ? 10 : integerAtLeast(o.probeSamples, `${OWNER}.probeSamples`),
    reprobeAbove,
    maxHoldMs: o.maxHold === undefined ? 60_000 : parseTimerDuration(o.maxHold, `${OWNER}.maxHold`),
    classes: new PriorityClasses(o.shares, `${OWNER}.shares`),
    timers: o.timers === undefined ? systemTimers : checkTimers(o.timers, `${OWNER}.timers`),
    name: o.name === undefined ? 'adaptive' : printable(o.name, `${OWNER}.name`),
  });
}

/** A count of permits: an integer from 1 to `MAX_COUNT`. */
function permits(value: unknown, field: string): number {
  const n = integerAtLeast(value, field);
  if (n > MAX_COUNT) throw new InvalidOptionError(field, value, `an integer of at most ${MAX_COUNT}`);
  return n;
}

/** A name: a non-empty string of printable ASCII (a label value). */
function printable(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.length === 0 || !isPrintableAscii(value))
    throw new InvalidOptionError(field, value, 'a non-empty string of printable ASCII');
  return value;
}
