import { InvalidOptionError, type Algorithm } from '@rl/core';
import { HttpRateLimiter, directBinding } from '@rl/core/http';
import { MemoryStore } from '@rl/store-memory';
import type { ClientStats } from './client-stats.js';
import type { LimitSpec } from './limits.js';
import type { Traffic } from './traffic.js';
import { maxUnitsInWindow, percentile } from './window-max.js';

export interface SimulateOptions {
  /** The span of "largest admitted in any window" (ms). Default 1000. */
  windowMs?: number;
  /** The chart's time slice (ms). Default: about 120 slices over the traffic, a round number of ms. */
  sliceMs?: number;
  /**
   * `--wait`: the longest an admitted request may be held (ms), the HTTP layer's `wait: { maxDelay }`.
   * Applied to every limit the HTTP layer accepts it for (every rate algorithm: each reserves its
   * slot, `limiter.reserve`). Without it a shaper is held as long as its queue needs (its capacity ×
   * emission interval) and the other algorithms never hold.
   */
  waitMs?: number;
  /**
   * How many keys get series of their own in `slices.keys` (the busiest by arrivals, ties to the
   * first seen), when the traffic has more than one key. Default 0.
   */
  keySeries?: number;
  /** Called every 65,536 arrivals and at the end of each limit: (limit index, arrivals done, arrivals). */
  onProgress?: (limit: number, done: number, total: number) => void;
}

/** What one limit did to the traffic. Times in ms; counts of requests unless they say units. */
export interface LimitReport {
  readonly label: string;
  readonly algorithm: string;
  readonly options: Readonly<Record<string, unknown>>;
  readonly requests: number;
  readonly admitted: number;
  readonly denied: number;
  /** Admitted with a delay above 0 (a shaper, or a reservation). */
  readonly delayed: number;
  readonly admittedUnits: number;
  /** Delays of the admitted requests (0 for those not held), nearest rank. */
  readonly delayMs: { readonly p50: number; readonly p95: number; readonly p99: number; readonly max: number };
  /**
   * The most units admitted requests proceed with (arrival + delay: what the backend sees) in any span
   * of `windowMs`, over all keys and for the busiest key: requests, when each costs 1; in the unit of
   * `boundPerKey` whatever the costs (a shaper's: requests).
   */
  readonly maxInWindow: {
    readonly windowMs: number;
    readonly allKeys: number;
    readonly perKey: number;
    readonly boundPerKey: number | undefined;
  };
  /** The longest hold applied (ms), or null when the HTTP layer does not wait for this algorithm (yet). */
  readonly waitMs: number | null;
  /** What it really bounds (see the README's "Choosing an algorithm"). */
  readonly bounds: string;
  /**
   * Per slice of `sliceMs` from `startMs`, by arrival time: requests admitted (those held included),
   * admitted after a delay, denied; and, with `keySeries`, the same for each of the busiest keys.
   */
  readonly slices: SliceSeries & { readonly keys?: readonly KeySeries[] };
  /** With `--clients`: what the clients did (each request above is then one client's attempt). */
  readonly clients?: ClientStats;
}

/** Requests per slice: admitted (held or not), the held ones among them, denied. */
export interface SliceSeries {
  readonly admitted: readonly number[];
  readonly delayed: readonly number[];
  readonly denied: readonly number[];
}

/** The slices of one key. */
export interface KeySeries extends SliceSeries {
  readonly key: string;
  /** Its arrivals over the whole traffic. */
  readonly requests: number;
}

export interface SimulationReport {
  readonly requests: number;
  readonly keys: number;
  /** The first arrival's slice start and the last arrival (ms on the limiter's clock). */
  readonly startMs: number;
  readonly endMs: number;
  readonly sliceMs: number;
  readonly windowMs: number;
  readonly limits: readonly LimitReport[];
}

/** The most slices a chart has: far more than a chart can show, few enough to keep the report small. */
export const MAX_SLICES = 100_000;

/** One request as the simulated HTTP layer sees it: its key and its cost in units. */
export interface Arrival {
  key: string;
  cost: number;
}

/** A framework binding for replayed arrivals: keys come from the traffic, never from an address. */
const BINDING = directBinding<Arrival>({
  owner: 'simulate',
  clientIp: () => undefined,
  createStore: () => new MemoryStore({ sweepInterval: false }),
});

/**
 * Replays `traffic` through each limit, each on a memory store of its own, through the HTTP layer
 * the middleware uses (`HttpRateLimiter`: the same composition, give-backs and `wait` as
 * `@rl/express` and the others), on a virtual clock moved to each arrival's time. Arrivals are
 * decided in order, synchronously: a run is deterministic.
 */
export function simulate(
  traffic: Traffic,
  limits: readonly LimitSpec[],
  options: SimulateOptions = {},
): SimulationReport {
  for (const limit of limits) {
    if (limit.algorithm.stateKind === 'leases') {
      throw new InvalidOptionError(
        '--limit',
        limit.label,
        'a rate algorithm: a concurrency limit holds permits for as long as a request runs, which replayed arrivals do not say',
      );
    }
  }
  const n = traffic.times.length;
  const windowMs = options.windowMs ?? 1000;
  const first = n === 0 ? 0 : traffic.times[0]!;
  const last = n === 0 ? 0 : traffic.times[n - 1]!;
  const sliceMs = options.sliceMs ?? autoSlice(last - first);
  if ((last - first) / sliceMs > MAX_SLICES) {
    throw new InvalidOptionError(
      '--slice',
      sliceMs,
      `a slice of at least ${Math.ceil((last - first) / MAX_SLICES)}ms: at most ${MAX_SLICES} slices over the ${last - first}ms of this traffic`,
    );
  }
  const startMs = Math.floor(first / sliceMs) * sliceMs;
  const tracked = busiestKeys(traffic, options.keySeries ?? 0);
  const report = limits.map((limit, i) =>
    runLimit(traffic, limit, i, {
      windowMs,
      sliceMs,
      startMs,
      tracked,
      waitMs: options.waitMs,
      onProgress: options.onProgress,
    }),
  );
  return { requests: n, keys: traffic.keys.length, startMs, endMs: last, sliceMs, windowMs, limits: report };
}

function runLimit(
  traffic: Traffic,
  limit: LimitSpec,
  index: number,
  o: {
    windowMs: number;
    sliceMs: number;
    startMs: number;
    tracked: TrackedKeys | undefined;
    waitMs: number | undefined;
    onProgress: SimulateOptions['onProgress'];
  },
): LimitReport {
  const algorithm = limit.algorithm;
  let now = 0;
  const clock = () => now;
  const store = new MemoryStore({ sweepInterval: false, maxKeys: Math.max(1_000_000, traffic.keys.length), clock });
  const { http, waitMs } = httpLimiter(algorithm, store, clock, { unitCosts: traffic.unitCosts, waitMs: o.waitMs });

  const { times, keyIndex, keys, costs } = traffic;
  const n = times.length;
  const admittedSlices = new Array<number>(
    Math.max(1, Math.floor(((times[n - 1] ?? 0) - o.startMs) / o.sliceMs) + 1),
  ).fill(0);
  const deniedSlices = new Array<number>(admittedSlices.length).fill(0);
  const delayedSlices = new Array<number>(admittedSlices.length).fill(0);
  const tracked = o.tracked;
  const perKey = tracked?.keys.map(() => ({
    admitted: new Array<number>(admittedSlices.length).fill(0),
    delayed: new Array<number>(admittedSlices.length).fill(0),
    denied: new Array<number>(admittedSlices.length).fill(0),
  }));
  const delays = new Float64Array(n);
  const proceed = new Float64Array(n);
  const proceedKey = new Uint32Array(n);
  const proceedUnits = new Float64Array(n);
  let admitted = 0;
  let delayed = 0;
  let units = 0;
  const arrival: Arrival = { key: '', cost: 1 };
  for (let i = 0; i < n; i++) {
    now = times[i]!;
    arrival.key = keys[keyIndex[i]!]!;
    arrival.cost = costs[i]!;
    const result = http.decide(arrival);
    // A memory store and plain key and cost functions: the HTTP layer answers synchronously.
    if (result === undefined || result instanceof Promise)
      throw new Error('simulate: the HTTP layer answered asynchronously; expected a synchronous memory store');
    const slice = Math.floor((now - o.startMs) / o.sliceMs);
    const own = perKey === undefined ? undefined : perKey[tracked!.slot[keyIndex[i]!]!];
    if (result.allowed) {
      delays[admitted] = result.delayMs;
      proceed[admitted] = now + result.delayMs;
      proceedKey[admitted] = keyIndex[i]!;
      proceedUnits[admitted] = arrival.cost;
      admitted++;
      units += arrival.cost;
      admittedSlices[slice]!++;
      if (own) own.admitted[slice]!++;
      if (result.delayMs > 0) {
        delayed++;
        delayedSlices[slice]!++;
        if (own) own.delayed[slice]!++;
      }
    } else {
      deniedSlices[slice]!++;
      if (own) own.denied[slice]!++;
    }
    if ((i & 0xffff) === 0xffff) o.onProgress?.(index, i + 1, n);
  }
  o.onProgress?.(index, n, n);
  void store.close?.();

  const sortedDelays = delays.subarray(0, admitted).sort();
  const proceeding = proceed.subarray(0, admitted);
  // The units of each admitted request: one number when every arrival costs the same. A shaper's bound
  // (`mayDelay`) counts requests leaving its queue (see `Algorithm.boundInSpan`), whatever they cost: so does its max.
  const eachUnits = algorithm.mayDelay ? 1 : (sameCost(costs) ?? proceedUnits.subarray(0, admitted));
  return {
    label: limit.label,
    algorithm: limit.factory,
    options: limit.options,
    requests: n,
    admitted,
    denied: n - admitted,
    delayed,
    admittedUnits: units,
    delayMs: {
      p50: percentile(sortedDelays, 50),
      p95: percentile(sortedDelays, 95),
      p99: percentile(sortedDelays, 99),
      max: admitted === 0 ? 0 : sortedDelays[admitted - 1]!,
    },
    maxInWindow: {
      windowMs: o.windowMs,
      allKeys: maxUnitsInWindow(proceeding, eachUnits, o.windowMs),
      perKey: busiestKey(proceeding, proceedKey.subarray(0, admitted), keys.length, {
        units: eachUnits,
        spanMs: o.windowMs,
      }),
      boundPerKey: algorithm.boundInSpan(o.windowMs),
    },
    waitMs,
    bounds: algorithm.describe(),
    slices: {
      admitted: admittedSlices,
      delayed: delayedSlices,
      denied: deniedSlices,
      ...(perKey && {
        keys: perKey.map((series, k) => ({
          key: keys[tracked!.keys[k]!]!,
          requests: tracked!.requests[k]!,
          ...series,
        })),
      }),
    },
  };
}

/**
 * The HTTP layer for one limit. `waitMs` is offered as `wait: { maxDelay }`, which every algorithm
 * that can reserve takes (`maxReserveMs` above 0: every rate algorithm); a limit that cannot wait runs
 * without it and reports `waitMs: null`. `headers`: it writes rl's default headers (draft-8
 * `RateLimit` fields, and `Retry-After` on a denial) for simulated clients to read; default none.
 */
export function httpLimiter(
  algorithm: Algorithm,
  store: MemoryStore,
  clock: () => number,
  o: { unitCosts: boolean; waitMs: number | undefined; headers?: boolean },
): { http: HttpRateLimiter<Arrival>; waitMs: number | null } {
  const waitMs = o.waitMs;
  const base = {
    algorithm,
    store,
    clock,
    prefix: 'sim',
    key: (a: Arrival) => a.key,
    cost: o.unitCosts ? 1 : (a: Arrival) => a.cost,
    headers: o.headers === true ? ('draft-8' as const) : (false as const),
    logStoreErrors: false,
  };
  // A shaper without --wait is held as long as its queue makes it wait: its whole horizon, in whole ms
  // (float noise below a nanosecond forgiven, as the HTTP layer forgives it in a maxDelay).
  // A shaper given no wait holds a request as long as its own queue: its horizon (a reservation may queue longer).
  const layout = algorithm.script.layout;
  const queueMs = layout.compact ? Math.min(algorithm.maxReserveMs, layout.horizonMs) : algorithm.maxReserveMs;
  const wait = waitMs ?? (algorithm.mayDelay ? Math.ceil(queueMs - HORIZON_NOISE_MS) : undefined);
  if (wait === undefined || algorithm.maxReserveMs === 0)
    return { http: new HttpRateLimiter<Arrival>(base, BINDING), waitMs: null };
  return { http: new HttpRateLimiter<Arrival>({ ...base, wait: { maxDelay: wait } }, BINDING), waitMs: wait };
}

/** Below a nanosecond: what a horizon computed in floating point may be off by. */
export const HORIZON_NOISE_MS = 1e-6;

/** The largest {@link maxUnitsInWindow} of any one key (`units`: per admitted request, or one number for all). */
function busiestKey(
  times: Float64Array,
  keyOf: Uint32Array,
  keyCount: number,
  { units, spanMs }: { units: Float64Array | number; spanMs: number },
): number {
  if (keyCount === 1) return maxUnitsInWindow(times, units, spanMs);
  const perKey: number[][] = Array.from({ length: keyCount }, () => []);
  const perKeyUnits: number[][] = Array.from({ length: keyCount }, () => []);
  for (let i = 0; i < times.length; i++) {
    perKey[keyOf[i]!]!.push(times[i]!);
    if (typeof units !== 'number') perKeyUnits[keyOf[i]!]!.push(units[i]!);
  }
  let best = 0;
  for (let k = 0; k < keyCount; k++)
    best = Math.max(best, maxUnitsInWindow(perKey[k]!, typeof units === 'number' ? units : perKeyUnits[k]!, spanMs));
  return best;
}

/** The cost every arrival has, or undefined when they differ (or there are none). */
function sameCost(costs: ArrayLike<number>): number | undefined {
  if (costs.length === 0) return undefined;
  const first = costs[0]!;
  for (let i = 1; i < costs.length; i++) if (costs[i] !== first) return undefined;
  return first;
}

/** The keys given series of their own: their indexes, arrivals, and each key's slot (-1: not tracked). */
interface TrackedKeys {
  keys: number[];
  requests: number[];
  slot: Int32Array;
}

/** The `count` busiest keys (most arrivals; ties to the lower index), or none for one key. */
function busiestKeys(traffic: Traffic, count: number): TrackedKeys | undefined {
  if (count <= 0 || traffic.keys.length < 2) return undefined;
  const arrivals = new Uint32Array(traffic.keys.length);
  for (const k of traffic.keyIndex) arrivals[k]!++;
  const order = Array.from(arrivals.keys())
    .sort((a, b) => arrivals[b]! - arrivals[a]! || a - b)
    .slice(0, count);
  const slot = new Int32Array(traffic.keys.length).fill(-1);
  order.forEach((k, i) => (slot[k] = i));
  return { keys: order, requests: order.map((k) => arrivals[k]!), slot };
}

/** A slice giving about 120 bars over `spanMs`: 1, 2 or 5 × a power of ten, in ms (at least 1 ms). */
export function autoSlice(spanMs: number): number {
  const raw = Math.max(1, spanMs / 120);
  const power = 10 ** Math.floor(Math.log10(raw));
  for (const step of [1, 2, 5, 10]) if (raw <= step * power) return step * power;
  return 10 * power;
}
