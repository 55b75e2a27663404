import { InvalidOptionError, parseDuration } from '@rl/core';
import { mulberry32 } from './random.js';
import { Traffic, TrafficBuilder } from './traffic.js';

/**
 * One part of a traffic pattern:
 * - `rate`: `600/s for 300s`, evenly spaced arrivals (the first at the part's start, then one every
 *   `1 / rate`), the parts one after the other;
 * - `poisson`: `poisson 200/s for 30s`, arrivals of a Poisson process of that mean rate (exponential
 *   gaps from a seeded generator, so a run is reproducible);
 * - `idle`: `idle 5s`, nothing for that long;
 * - `burst`: `burst 400 at 10s`, `count` arrivals at one instant, `atMs` from the start of the pattern
 *   (it does not move the end of the sequence).
 */
export type PatternPart =
  | {
      readonly kind: 'rate' | 'poisson';
      readonly rate: number;
      readonly unitMs: number;
      readonly perMs: number;
      readonly forMs: number;
      readonly text: string;
    }
  | { readonly kind: 'idle'; readonly forMs: number; readonly text: string }
  | { readonly kind: 'burst'; readonly count: number; readonly atMs: number; readonly text: string };

const RATE = /^(\d+(?:\.\d+)?)\s*\/\s*(ms|s|m|min|h)$/;
const PER_UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, min: 60_000, h: 3_600_000 };
/** The most arrivals one pattern may make: enough for any replay, few enough to fit the arrays. */
export const MAX_ARRIVALS = 50_000_000;

/**
 * Parses `--pattern`: parts separated by commas (see {@link PatternPart}). Throws
 * `InvalidOptionError` on `--pattern` naming the part (its number and text) and what it should be.
 */
export function parsePattern(text: string): PatternPart[] {
  if (typeof text !== 'string' || text.trim() === '') {
    throw new InvalidOptionError(
      '--pattern',
      text,
      'parts such as "50/s for 60s, 600/s for 300s", "burst 400 at 10s", "poisson 200/s for 30s" or "idle 5s"',
    );
  }
  const parts = text.split(',').map((part, i) => parsePart(part.trim(), i + 1));
  const total = parts.reduce((sum, p) => sum + expectedArrivals(p), 0);
  if (total === 0)
    throw new InvalidOptionError(
      '--pattern',
      text,
      'at least one arrival (a rate, poisson or burst part besides "idle")',
    );
  if (total > MAX_ARRIVALS) {
    throw new InvalidOptionError(
      '--pattern',
      text,
      `at most ${MAX_ARRIVALS} arrivals (this pattern makes about ${Math.round(total)}): shorten a part or lower its rate`,
    );
  }
  return parts;
}

function parsePart(part: string, index: number): PatternPart {
  const field = `--pattern part ${index}`;
  const fail = (expected: string): never => {
    throw new InvalidOptionError(field, part, expected);
  };
  const words = part.split(/\s+/);
  if (part === '') fail('a part between the commas (an empty one was given)');
  if (words[0] === 'burst') {
    if (words.length !== 4 || words[2] !== 'at') fail('"burst <count> at <time>", for example "burst 400 at 10s"');
    const count = Number(words[1]);
    if (!Number.isInteger(count) || count < 1) fail(`a whole number of requests after "burst" (got "${words[1]}")`);
    return { kind: 'burst', count, atMs: offset(words[3]!, field, part), text: part };
  }
  if (words[0] === 'idle') {
    if (words.length !== 2) fail('"idle <duration>", for example "idle 5s"');
    return { kind: 'idle', forMs: duration(words[1]!, field, part), text: part };
  }
  const poisson = words[0] === 'poisson';
  const rest = poisson ? words.slice(1) : words;
  // "600/s for 300s" and "600 / s for 300s" alike.
  const forAt = rest.indexOf('for');
  if (forAt < 1 || forAt !== rest.length - 2) {
    fail(
      `"${poisson ? 'poisson ' : ''}<rate> for <duration>", for example "${poisson ? 'poisson 200/s for 30s' : '600/s for 300s'}" (or "burst 400 at 10s", "idle 5s")`,
    );
  }
  const rateText = rest.slice(0, forAt).join('');
  const match = RATE.exec(rateText);
  if (!match) fail(`a rate such as "600/s" (requests per ms, s, m or h) before "for" (got "${rateText}")`);
  const rate = Number(match![1]);
  const unitMs = PER_UNIT_MS[match![2]!]!;
  if (!(rate > 0)) fail(`a rate above 0 (got "${rateText}")`);
  return {
    kind: poisson ? 'poisson' : 'rate',
    rate,
    unitMs,
    perMs: rate / unitMs,
    forMs: duration(rest[forAt + 1]!, field, part),
    text: part,
  };
}

/** A time from the start of the pattern: `0`, `0s`, or any duration. */
function offset(text: string, field: string, part: string): number {
  if (/^0+(\.0+)?(ms|s|m|h|d)?$/.test(text)) return 0;
  return duration(text, field, part);
}

/** A duration of a part; the error shows the whole part, and which word is not a duration. */
function duration(text: string, field: string, part: string): number {
  try {
    return parseDuration(text, field);
  } catch {
    throw new InvalidOptionError(field, part, `a duration such as 500ms, 10s, 5m or 1h where "${text}" is`);
  }
}

function expectedArrivals(part: PatternPart): number {
  if (part.kind === 'burst') return part.count;
  if (part.kind === 'idle') return 0;
  return part.perMs * part.forMs;
}

/** Where the pattern ends: the sum of the sequential parts, or the last burst if later (ms). */
export function patternLengthMs(parts: readonly PatternPart[]): number {
  let end = 0;
  let last = 0;
  for (const p of parts) {
    if (p.kind === 'burst') last = Math.max(last, p.atMs);
    else end += p.forMs;
  }
  return Math.max(end, last);
}

/**
 * The arrivals of a pattern, sorted by time, starting at `startMs` (default 0), spread over `keys`
 * keys (`key-0` … `key-<n−1>`, arrival i to key i mod n, so each key sees 1/n of the traffic), each
 * costing `cost`. `seed` makes the Poisson parts reproducible.
 */
export function patternTraffic(
  parts: readonly PatternPart[],
  options: { keys?: number; cost?: number; seed?: number; startMs?: number } = {},
): Traffic {
  const keys = options.keys ?? 1;
  const start = options.startMs ?? 0;
  const random = mulberry32(options.seed ?? 1);
  const builder = new TrafficBuilder();
  const keyNames = Array.from({ length: keys }, (_, i) => (keys === 1 ? 'key' : `key-${i}`));
  const times: number[] = [];
  let cursor = 0;
  for (const p of parts) {
    if (p.kind === 'burst') {
      for (let i = 0; i < p.count; i++) times.push(p.atMs);
      continue;
    }
    if (p.kind === 'rate') {
      // Computed from the index with one division (exact for 50/s: every 20 ms), not accumulated, so a long part does not drift.
      const n = Math.ceil((p.rate * p.forMs) / p.unitMs - 1e-9);
      for (let i = 0; i < n; i++) times.push(cursor + (i * p.unitMs) / p.rate);
    } else if (p.kind === 'poisson') {
      for (
        let t = cursor - Math.log(1 - random()) / p.perMs;
        t < cursor + p.forMs;
        t -= Math.log(1 - random()) / p.perMs
      )
        times.push(t);
    }
    cursor += p.forMs;
  }
  // Bursts are placed by time among the sequential parts; ties keep their order (stable sort).
  const sorted = Float64Array.from(times).sort();
  for (let i = 0; i < sorted.length; i++) builder.add(start + sorted[i]!, keyNames[i % keys]!, options.cost ?? 1);
  return builder.build();
}
