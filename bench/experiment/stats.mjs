// The figures of one run of the burst experiment, from the load generator's and the backend's records.

/** The p-th percentile (0..100) of sorted values, nearest rank; NaN when empty. */
export function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

/** The largest number of sorted times within any span of `spanMs` (a span [t, t + spanMs)). */
export function maxInSpan(sorted, spanMs) {
  let best = 0;
  let lo = 0;
  for (let hi = 0; hi < sorted.length; hi++) {
    while (sorted[hi] - sorted[lo] >= spanMs) lo++;
    best = Math.max(best, hi - lo + 1);
  }
  return best;
}

/** Counts of times (ms) per bin of `binMs` over [fromMs, toMs). */
export function binned(times, fromMs, toMs, binMs) {
  const bins = new Array(Math.ceil((toMs - fromMs) / binMs)).fill(0);
  for (const t of times) {
    const i = Math.floor((t - fromMs) / binMs);
    if (i >= 0 && i < bins.length) bins[i]++;
  }
  return bins;
}

/** Log-spaced latency bins, 0.5 ms to 10 s, 10 per decade: `{ edges, counts }`. */
export function latencyHistogram(values) {
  const edges = [];
  for (let e = Math.log10(0.5); e <= 4 + 1e-9; e += 0.1) edges.push(10 ** e);
  const counts = new Array(edges.length - 1).fill(0);
  for (const v of values) {
    let i = Math.floor((Math.log10(Math.max(v, 0.5)) - Math.log10(0.5)) / 0.1);
    counts[Math.min(counts.length - 1, Math.max(0, i))]++;
  }
  return { edges: edges.map((x) => Math.round(x * 1000) / 1000), counts };
}

const round = (x) => (Number.isFinite(x) ? Math.round(x * 10) / 10 : null);

/**
 * The summary of one configuration's run: requests sent, admitted (200), denied (429), errors (any
 * other outcome, timeouts included); latency percentiles of the admitted and of the 429s; and what the
 * backend saw (largest arrivals in any 10 ms, peak concurrency). `surgeAtMs`: where the chart's
 * 10 ms view of the backend's arrivals starts (1 s before the surge) and ends (5 s after).
 */
export function summarize({ load, backend, surgeAtMs, lengthMs }) {
  const ok = [];
  const denied = [];
  let errors = 0;
  load.status.forEach((s, i) => {
    if (s === 200) ok.push(load.latency[i]);
    else if (s === 429) denied.push(load.latency[i]);
    else errors++;
  });
  ok.sort((a, b) => a - b);
  denied.sort((a, b) => a - b);
  const arrivals = backend.arrivals.slice().sort((a, b) => a - b);
  const mean = (v) => (v.length ? v.reduce((a, b) => a + b, 0) / v.length : NaN);
  return {
    sent: load.status.length,
    admitted: ok.length,
    denied: denied.length,
    errors,
    admittedLatencyMs: {
      p50: round(percentile(ok, 50)),
      p95: round(percentile(ok, 95)),
      p99: round(percentile(ok, 99)),
      max: round(ok.at(-1)),
      mean: round(mean(ok)),
    },
    deniedLatencyMs: {
      p50: round(percentile(denied, 50)),
      p99: round(percentile(denied, 99)),
      max: round(denied.at(-1)),
      mean: round(mean(denied)),
    },
    backend: {
      arrivals: arrivals.length,
      maxArrivalsIn10ms: maxInSpan(arrivals, 10),
      maxArrivalsIn100ms: maxInSpan(arrivals, 100),
      peakConcurrency: backend.peakConcurrency,
      per10msAroundSurge: {
        fromMs: surgeAtMs - 1000,
        counts: binned(arrivals, surgeAtMs - 1000, surgeAtMs + 5000, 10),
      },
      per100ms: binned(arrivals, 0, lengthMs, 100),
    },
    admittedHistogram: latencyHistogram(ok),
  };
}
