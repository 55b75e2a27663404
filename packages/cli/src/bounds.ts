import { formatDuration, type Algorithm } from '@rl/core';

/**
 * What an algorithm really bounds, in the words of the README's "Choosing an algorithm" table (the
 * seeds' conventions), with this configuration's numbers: per key, since every key has its own state.
 */
export function whatItBounds(algorithm: Algorithm): string {
  const o = algorithm.options as Record<string, number | string | boolean>;
  const num = (name: string) => o[name] as number;
  switch (algorithm.kind) {
    case 'fixed-window': {
      const w = formatDuration(num('window'));
      return `each aligned window [k·${w}, (k+1)·${w}) admits at most ${num('limit')}; up to ${2 * num('limit')} around a boundary`;
    }
    case 'sliding-window-log':
      return `any rolling window (now − ${formatDuration(num('window'))}, now] admits at most ${num('limit')}, exactly; one record per admitted request`;
    case 'sliding-window-counter':
      return `an estimate of any rolling ${formatDuration(num('window'))}: previous window × remaining fraction + current ≤ ${num('limit')}; under-counts a burst at the end of the previous window`;
    case 'token-bucket':
      return `sustained rate + a burst: at most ${num('capacity')} + ${num('refillRate')}/${formatDuration(num('interval'))} × T in any span T; not "${num('refillRate')} in any ${formatDuration(num('interval'))}"`;
    case 'leaky-bucket':
      return o.mode === 'shape'
        ? `the pace: admitted requests leave one every ${formatMs(num('interval') / num('leakRate'))}; at most ${num('capacity')} queued`
        : `same bound as a token bucket (GCRA): at most ${num('capacity')} + ${num('leakRate')}/${formatDuration(num('interval'))} × T in any span T`;
    case 'concurrency':
      return `requests in flight at once: at most ${num('limit')}; permits come back on release (or after the lease, ${formatDuration(num('lease'))})`;
    default:
      return '';
  }
}

/**
 * The most this algorithm lets through for one key in any span `[s, s + spanMs)`, in units (for a
 * shaper, requests leaving the queue), when it has such a bound (the figure `whatItBounds` states);
 * undefined for the sliding counter (an estimate) and a concurrency limit.
 */
export function boundInSpan(algorithm: Algorithm, spanMs: number): number | undefined {
  const o = algorithm.options as Record<string, number | string | boolean>;
  const num = (name: string) => o[name] as number;
  switch (algorithm.kind) {
    case 'fixed-window':
      // A span [s, s + S) that starts inside a window meets up to ceil(S / w) + 1 aligned windows.
      return num('limit') * (Math.ceil(spanMs / num('window')) + 1);
    case 'sliding-window-log':
      return num('limit') * Math.ceil(spanMs / num('window'));
    case 'token-bucket':
      return Math.floor(num('capacity') + (num('refillRate') / num('interval')) * spanMs);
    case 'leaky-bucket':
      // Shaping: departures at least one emission interval apart, each reported up to 1 ms late (a
      // decision's delayMs is whole ms, rounded up), so a span of S holds at most ceil((S + 1) / T);
      // metering: a full burst, then the rate.
      return o.mode === 'shape'
        ? Math.ceil(((spanMs + 1) * num('leakRate')) / num('interval') - 1e-9)
        : Math.floor(num('capacity') + (num('leakRate') / num('interval')) * spanMs);
    default:
      return undefined;
  }
}

function formatMs(ms: number): string {
  return Number.isInteger(ms) ? formatDuration(ms) : `${Number(ms.toFixed(3))}ms`;
}
