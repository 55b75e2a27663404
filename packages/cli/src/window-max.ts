/**
 * The largest number of `times` in any half-open span `[s, s + spanMs)` of the line, for `times`
 * sorted ascending (ms). Two pointers: O(n). A span holding `times[i]` … `times[j]` exists exactly
 * when `times[j] − times[i] < spanMs`. Returns 0 for no times.
 */
export function maxInWindow(times: ArrayLike<number>, spanMs: number): number {
  let best = 0;
  let i = 0;
  for (let j = 0; j < times.length; j++) {
    while (times[j]! - times[i]! >= spanMs) i++;
    if (j - i + 1 > best) best = j - i + 1;
  }
  return best;
}

/**
 * The most units in any half-open span `[s, s + spanMs)` of the line: the largest sum of `units[k]`
 * over the `times[k]` (ms, in any order) one span holds; `units` one number for every time (then
 * {@link maxInWindow} times it). Sums of fractional costs are rounded to 1e-9, below float noise.
 */
export function maxUnitsInWindow(times: ArrayLike<number>, units: ArrayLike<number> | number, spanMs: number): number {
  if (typeof units === 'number') return roundNoise(maxInWindow(Float64Array.from(times).sort(), spanMs) * units);
  const order = Uint32Array.from({ length: times.length }, (_, k) => k).sort((a, b) => times[a]! - times[b]!);
  let best = 0;
  let sum = 0;
  let i = 0;
  for (let j = 0; j < order.length; j++) {
    sum += units[order[j]!]!;
    while (times[order[j]!]! - times[order[i]!]! >= spanMs) sum -= units[order[i++]!]!;
    if (sum > best) best = sum;
  }
  return roundNoise(best);
}

function roundNoise(n: number): number {
  return Math.round(n * 1e9) / 1e9;
}

/** The `p`-th percentile (0 < p ≤ 100) of `sorted` (ascending) by the nearest-rank method; 0 when empty. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}
