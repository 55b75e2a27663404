// What the interleaved A/B scripts (node-redis-ab.mjs, glide-ab.mjs) share: a timed slice of one
// limiter's decisions at a fixed number in flight, and the median and spread of the rounds.
import { ipKey } from './common.mjs';

/**
 * Runs `limiter.consume` on `inflight` lanes for `ms`, over `keys` keys in turn (`cursor.next`, shared
 * between the contenders so that each slice meets keys another wrote). Resolves to decisions/s and
 * the process's CPU µs per decision (native threads included).
 */
export async function timedSlice(limiter, { ms, inflight, keys, cursor }) {
  const stop = performance.now() + ms;
  let decisions = 0;
  const lane = async () => {
    while (performance.now() < stop) {
      await limiter.consume(ipKey(cursor.next++ % keys));
      decisions++;
    }
  };
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  await Promise.all(Array.from({ length: inflight }, lane));
  const cpu = process.cpuUsage(cpu0);
  return { perSecond: (decisions / (performance.now() - t0)) * 1000, cpuUs: (cpu.user + cpu.system) / decisions };
}

/** The `q` quantile of `values` (nearest rank). */
export const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};

/** `median (10th–90th percentile)` of `values`, with `digits` decimals. */
export const spread = (values, digits) =>
  `${quantile(values, 0.5).toFixed(digits)} (${quantile(values, 0.1).toFixed(digits)}–${quantile(values, 0.9).toFixed(digits)})`;

/**
 * Warms each contender (`{ name, limiter }`) for 2 s (its keys written once, its code warm), then runs
 * `rounds` rounds of one `sliceMs` slice each, the order reversed every other round, and prints per
 * contender the median and spread of its decisions/s, its CPU µs per decision, and its rate divided by
 * the `reference` contender's in the same round (a machine whose load changes still gives a ratio).
 */
export async function runInterleaved(contenders, { rounds, sliceMs, inflight, keys, reference }) {
  const cursor = { next: 0 };
  const slice = (c, ms) => timedSlice(c.limiter, { ms, inflight, keys, cursor });
  for (const c of contenders) await slice(c, 2000);
  const runs = new Map(contenders.map((c) => [c.name, []]));
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? contenders : [...contenders].reverse();
    const got = new Map();
    for (const c of order) got.set(c.name, await slice(c, sliceMs));
    for (const [name, run] of got) runs.get(name).push({ ...run, ratio: run.perSecond / got.get(reference).perSecond });
  }
  console.log(`${rounds} rounds of ${sliceMs} ms, ${inflight} in flight: median (10th–90th percentile)`);
  console.log(`| store | decisions/s | client CPU µs per decision | / ${reference}, same round |`);
  console.log('| --- | --- | --- | --- |');
  for (const [name, list] of runs) {
    const rate = spread(
      list.map((r) => r.perSecond / 1000),
      1,
    );
    const cpu = spread(
      list.map((r) => r.cpuUs),
      2,
    );
    const ratio = spread(
      list.map((r) => r.ratio),
      2,
    );
    console.log(`| ${name} | ${rate}k | ${cpu} | ${ratio} |`);
  }
}
