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

/** The `p`-th percentile (0 < p ≤ 100) of `sorted` (ascending) by the nearest-rank method; 0 when empty. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}
