// Section 1: in-process decisions per second through the public API, memory store, beside the peers.
import path from 'node:path';
import { CONTENDERS, RL_ALGORITHMS } from '../lib/memory-contenders.mjs';
import { BENCH_DIR, median, runWorker, verdict } from '../lib/common.mjs';

const WORKER = path.join(BENCH_DIR, 'sections/consume-worker.mjs');

export const title = '1. In-process decisions per second (memory store)';

export async function run({ quick, log, cpu = 0 }) {
  const rounds = quick ? 1 : 3;
  const warmMs = quick ? 150 : 300;
  const runMs = quick ? 300 : 700;
  const names = Object.keys(CONTENDERS);
  const keySets = [1, 100_000];
  const samples = {};
  for (let r = 0; r < rounds; r++) {
    // Alternate the order each round so no contender always runs first or last.
    const order = r % 2 === 0 ? names : [...names].reverse();
    for (const keys of keySets) {
      for (const name of order) {
        const res = await runWorker(WORKER, [name, String(keys), String(warmMs), String(runMs)], { cpu });
        (samples[`${name}|${keys}`] ??= []).push(res.opsPerSec);
      }
    }
    log(`  round ${r + 1}/${rounds} done`);
  }
  const ops = (name, keys) => median(samples[`${name}|${keys}`]);
  const ref = (k) => ops('hand bucket (sync)', k);
  const refAwait = (k) => ops('hand bucket (await)', k);
  const rlf = (k) => ops('rate-limiter-flexible Memory', k);
  const erl = (k) => ops('express-rate-limit MemoryStore', k);
  const rows = [];
  const raw = [];
  const targets = [];
  const notes = {};
  for (const name of names) {
    const c = await CONTENDERS[name]();
    notes[name] = c.note ?? c.skip;
    c.close?.();
    const row = [name];
    for (const k of keySets) {
      const v = ops(name, k);
      row.push(v, v / ref(k), v / refAwait(k), v / rlf(k), v / erl(k));
      raw.push({ contender: name, keys: k, opsPerSec: v, samples: samples[`${name}|${k}`], vsHandSync: v / ref(k), vsHandAwait: v / refAwait(k), vsRlf: v / rlf(k) });
    }
    rows.push(row);
  }
  for (const alg of Object.keys(RL_ALGORITHMS)) {
    for (const k of keySets) {
      const v = ops(`rl ${alg}`, k);
      targets.push({ target: `consume ${alg}, ${k === 1 ? 'hot key' : '100k keys'}: >= 0.75 x hand sync bucket`, value: v / ref(k), ok: v / ref(k) >= 0.75 });
      targets.push({ target: `consume ${alg}, ${k === 1 ? 'hot key' : '100k keys'}: >= 2 x rate-limiter-flexible`, value: v / rlf(k), ok: v / rlf(k) >= 2 });
    }
  }
  for (const k of keySets) {
    const v = ops('rl token-bucket (consumeSync)', k);
    if (Number.isFinite(v)) targets.push({ target: `(extra) consumeSync token-bucket, ${k === 1 ? 'hot key' : '100k keys'}: >= 0.75 x hand sync bucket`, value: v / ref(k), ok: v / ref(k) >= 0.75 });
  }
  const headers = ['contender', '1 key ops/s', '/hand', '/hand await', '/RLF', '/ERL', '100k ops/s', '/hand', '/hand await', '/RLF', '/ERL'];
  const how = Object.entries(notes).map(([n, s]) => `- ${n}: \`${s}\``).join('\n');
  return {
    tables: [{ caption: `median of ${rounds} alternating rounds, ${runMs} ms each after ${warmMs} ms warm-up, each in a fresh process pinned to core ${cpu}`, headers, rows }],
    targets: targets.map((t) => ({ ...t, verdict: verdict(t.ok) })),
    notes: `How each contender is called:\n${how}`,
    raw,
  };
}
