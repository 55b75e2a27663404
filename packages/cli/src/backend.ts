import { adaptiveConcurrency, InvalidOptionError, type Priority } from '@rl/core';
import { durationOption } from './duration-option.js';
import { runOverload, type OverloadGate, type OverloadStats } from '@rl/core/simulation';
import { callText, parseCall } from './limits.js';
import type { Traffic } from './traffic.js';
import { MAX_SLICES } from './simulate.js';

/** The backend of `--backend`: its capacity in flight, its service time, and a step of it. */
export interface BackendSpec {
  /** The text it was given as. */
  readonly label: string;
  /** Work served at full speed at once; past it, latency grows in proportion to the work in flight. */
  readonly capacity: number;
  /** Service time in ms. */
  readonly serviceMs: number;
  /** A step of the service time: `serviceMs` becomes `toMs` at `atMs` (the seed's 10 ms → 2 s at 30 s). */
  readonly slow: { readonly toMs: number; readonly atMs: number } | undefined;
}

/** A gate of `--backend` mode: no limit, fixed permits, or an adaptive limit. */
export interface GateSpec {
  readonly label: string;
  readonly gate: OverloadGate;
}

/**
 * Parses `--backend "capacity=100,service=10ms,slow=2s@30s"`: `capacity` (an integer of at least 1),
 * `service` (a duration), optionally `slow=<duration>@<instant>` (the service time from that instant
 * of the run on). A bad one is an `InvalidOptionError` on `--backend` naming the part to fix.
 */
export function parseBackend(text: string): BackendSpec {
  const parts = new Map<string, string>();
  for (const pair of text.split(',')) {
    const eq = pair.indexOf('=');
    const name = pair.slice(0, eq).trim();
    if (eq < 0 || !['capacity', 'service', 'slow'].includes(name) || parts.has(name))
      throw new InvalidOptionError(
        '--backend',
        pair.trim(),
        'capacity=<in flight>,service=<duration>[,slow=<duration>@<instant>], each once, for example "capacity=100,service=10ms,slow=2s@30s"',
      );
    parts.set(name, pair.slice(eq + 1).trim());
  }
  const capacity = Number(parts.get('capacity'));
  if (!Number.isInteger(capacity) || capacity < 1 || capacity > 1_000_000)
    throw new InvalidOptionError('--backend capacity', parts.get('capacity'), 'a whole number from 1 to 1000000');
  if (!parts.has('service')) throw new InvalidOptionError('--backend service', undefined, 'a duration, such as 10ms');
  const serviceMs = durationOption(parts.get('service'), '--backend service');
  const slowText = parts.get('slow');
  let slow: BackendSpec['slow'];
  if (slowText !== undefined) {
    const [to, at, extra] = slowText.split('@');
    if (to === undefined || at === undefined || extra !== undefined)
      throw new InvalidOptionError('--backend slow', slowText, 'a duration at an instant, such as 2s@30s');
    slow = { toMs: durationOption(to, '--backend slow'), atMs: durationOption(at, '--backend slow') };
  }
  return { label: text.trim(), capacity, serviceMs, slow };
}

/**
 * Parses one `--limit` of `--backend` mode: `none`, `concurrency(limit=50)` (fixed permits) or
 * `adaptiveConcurrency(min=5,max=1000,…)` (its options as `adaptiveConcurrency` takes them, checked
 * by it: its `InvalidOptionError` as it is).
 */
export function parseGate(text: string): GateSpec {
  const label = text.trim();
  if (label === 'none') return { label, gate: { kind: 'none' } };
  const { factory, options } = parseCall(text);
  if (factory === 'concurrency') {
    const permits = options.limit;
    if (Object.keys(options).some((k) => k !== 'limit') || !Number.isInteger(permits) || (permits as number) < 1)
      throw new InvalidOptionError('--limit concurrency', label, 'concurrency(limit=<a whole number of at least 1>)');
    return { label, gate: { kind: 'fixed', permits: permits as number } };
  }
  if (factory === 'adaptiveConcurrency') {
    adaptiveConcurrency(options); // its own checks, now
    return { label: label || callText(factory, options), gate: { kind: 'adaptive', options } };
  }
  throw new InvalidOptionError(
    '--limit',
    factory,
    'with --backend: none, concurrency(limit=50) or adaptiveConcurrency(min=5,max=1000)',
  );
}

/**
 * Parses `--classes "critical=3,normal=3,sheddable=4"`: the classes of the arrivals and their weights
 * (whole numbers from 1 to 100), in a fixed rotation.
 */
export function parseClasses(text: string): { priority: Priority; weight: number }[] {
  return text.split(',').map((pair) => {
    const [name, weight] = pair.split('=').map((p) => p.trim());
    const w = Number(weight);
    const priority: Priority | undefined =
      name === 'critical' || name === 'normal' || name === 'sheddable'
        ? name
        : name !== undefined && /^0?\.\d+$|^1$/.test(name)
          ? Number(name)
          : undefined;
    if (priority === undefined || !Number.isInteger(w) || w < 1 || w > 100)
      throw new InvalidOptionError(
        '--classes',
        pair.trim(),
        'class=weight pairs, the classes critical, normal, sheddable or a share in (0, 1], the weights whole numbers from 1 to 100: "critical=3,normal=3,sheddable=4"',
      );
    return { priority, weight: w };
  });
}

/** What one gate did before the backend: over the whole run and per slice. */
export interface GateReport {
  readonly label: string;
  readonly total: OverloadStats;
  readonly slices: readonly OverloadStats[];
}

/** The report of `--backend` mode (its `--json`). */
export interface BackendReport {
  readonly backend: BackendSpec;
  readonly requests: number;
  readonly durationMs: number;
  readonly sliceMs: number;
  readonly limits: readonly GateReport[];
}

/** The longest traffic `--backend` replays (ms): its backend is stepped every 10 ms, 8.64 million steps a day. */
export const MAX_BACKEND_SPAN_MS = 24 * 3_600_000;

/**
 * Replays `traffic`'s arrival times through each gate into the backend, on a virtual clock, from its
 * first arrival (at 0) to its last, in slices of `sliceMs`. Keys and costs are not used: a backend
 * serves work, one piece per request.
 */
export function simulateBackend(
  traffic: Traffic,
  backend: BackendSpec,
  gates: readonly GateSpec[],
  options: { sliceMs: number; classes?: readonly { priority: Priority; weight: number }[] },
): BackendReport {
  const start = traffic.times[0] ?? 0;
  const arrivals = Array.from(traffic.times, (t) => t - start);
  const durationMs = Math.max(1, (arrivals.at(-1) ?? 0) + 1);
  // The backend is stepped every 10 ms of the run, busy or idle: bounded, as the slices are.
  if (durationMs > MAX_BACKEND_SPAN_MS)
    throw new InvalidOptionError(
      '--pattern',
      `${durationMs}ms`,
      `traffic spanning at most ${MAX_BACKEND_SPAN_MS / 3_600_000} hours with --backend (its backend is stepped every 10 ms)`,
    );
  if (durationMs / options.sliceMs > MAX_SLICES)
    throw new InvalidOptionError(
      '--slice',
      options.sliceMs,
      `a slice of at least ${Math.ceil(durationMs / MAX_SLICES)}ms: at most ${MAX_SLICES} slices over the ${durationMs}ms of this traffic`,
    );
  const slow = backend.slow;
  const serviceMs =
    slow === undefined ? () => backend.serviceMs : (at: number) => (at < slow.atMs ? backend.serviceMs : slow.toMs);
  const limits = gates.map(({ label, gate }) => {
    const report = runOverload({
      arrivals,
      durationMs,
      sliceMs: options.sliceMs,
      capacity: backend.capacity,
      serviceMs,
      gate,
      classes: options.classes,
    });
    return { label, total: report.total, slices: report.slices };
  });
  return { backend, requests: arrivals.length, durationMs, sliceMs: options.sliceMs, limits };
}
