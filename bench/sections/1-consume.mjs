// Section 1: in-process decisions per second through the public API, memory store, beside the peers.
import path from 'node:path';
import { CONTENDERS, RL_ALGORITHMS } from '../lib/memory-contenders.mjs';
import { BENCH_DIR, median, runWorker, verdict } from '../lib/common.mjs';

const WORKER = path.join(BENCH_DIR, 'sections/consume-worker.mjs');
const EVICTION_WORKER = path.join(BENCH_DIR, 'sections/eviction-worker.mjs');
/**
 * The eviction rows: a flood of distinct keys through `maxKeys`, for a slab table and an object table,
 * and its lockout twin: a flood of distinct clients each blocked (a new block per key, through the
 * block table at `maxKeys`).
 */
const EVICTION_ALGORITHMS = ['token-bucket', 'sliding-window-log', 'lockout'];

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
      raw.push({
        contender: name,
        keys: k,
        opsPerSec: v,
        samples: samples[`${name}|${k}`],
        vsHandSync: v / ref(k),
        vsHandAwait: v / refAwait(k),
        vsRlf: v / rlf(k),
      });
    }
    rows.push(row);
  }
  for (const alg of Object.keys(RL_ALGORITHMS)) {
    for (const k of keySets) {
      const v = ops(`rl ${alg}`, k);
      targets.push({
        target: `consume ${alg}, ${k === 1 ? 'hot key' : '100k keys'}: >= 0.75 x hand sync bucket`,
        value: v / ref(k),
        ok: v / ref(k) >= 0.75,
      });
      targets.push({
        target: `consume ${alg}, ${k === 1 ? 'hot key' : '100k keys'}: >= 2 x rate-limiter-flexible`,
        value: v / rlf(k),
        ok: v / rlf(k) >= 2,
      });
    }
  }
  for (const k of keySets) {
    const v = ops('rl token-bucket (consumeSync)', k);
    if (Number.isFinite(v))
      targets.push({
        target: `(extra) consumeSync token-bucket, ${k === 1 ? 'hot key' : '100k keys'}: >= 0.75 x hand sync bucket`,
        value: v / ref(k),
        ok: v / ref(k) >= 0.75,
      });
  }
  // Issue 16 (hot paths), at 100k keys: the promise path near the awaited hand bucket and at least
  // express-rate-limit's increment; the synchronous path near the synchronous hand bucket.
  const many = keySets.at(-1);
  if (many > 1) {
    for (const alg of ['token-bucket', 'fixed-window']) {
      const v = ops(`rl ${alg}`, many);
      targets.push({
        target: `await consume ${alg}, 100k keys: >= 0.75 x hand bucket (await)`,
        value: v / refAwait(many),
        ok: v / refAwait(many) >= 0.75,
      });
      targets.push({
        target: `await consume ${alg}, 100k keys: >= 1.0 x express-rate-limit increment`,
        value: v / erl(many),
        ok: v / erl(many) >= 1,
      });
    }
    const sync = ops('rl token-bucket (consumeSync)', many);
    if (Number.isFinite(sync))
      targets.push({
        target: 'consumeSync token-bucket, 100k keys: >= 0.9 x hand bucket (sync)',
        value: sync / ref(many),
        ok: sync / ref(many) >= 0.9,
      });
  }
  for (const k of keySets) {
    const plain = ops('rl token-bucket', k);
    const observed = ops('rl token-bucket (observed)', k);
    if (Number.isFinite(observed)) {
      const extraUs = 1e6 / observed - 1e6 / plain;
      targets.push({
        target: `(extra) consume token-bucket with an observer, ${k === 1 ? 'hot key' : '100k keys'}: <= 1 us per decision over none`,
        value: extraUs,
        ok: extraUs <= 1,
      });
    }
  }
  const eviction = await evictionRows({ quick, log, cpu, rounds });
  targets.push(...eviction.targets);
  const headers = [
    'contender',
    '1 key ops/s',
    '/hand',
    '/hand await',
    '/RLF',
    '/ERL',
    '100k ops/s',
    '/hand',
    '/hand await',
    '/RLF',
    '/ERL',
  ];
  const how = Object.entries(notes)
    .map(([n, s]) => `- ${n}: \`${s}\``)
    .join('\n');
  return {
    tables: [
      {
        caption: `median of ${rounds} alternating rounds, ${runMs} ms each after ${warmMs} ms warm-up, each in a fresh process pinned to core ${cpu}`,
        headers,
        rows,
      },
      eviction.table,
    ],
    targets: targets.map((t) => ({ ...t, verdict: verdict(t.ok) })),
    notes: `How each contender is called:\n${how}`,
    raw,
    evictionRaw: eviction.raw,
  };
}

/**
 * Eviction at maxKeys: the cost of a new key (`consumeSync`, one decision that inserts it) before the
 * store fills and once it is full, when every new key evicts one, over 1M evictions in chunks.
 */
async function evictionRows({ quick, log, cpu, rounds }) {
  const maxKeys = quick ? 20_000 : 100_000;
  const evictions = quick ? 200_000 : 1_000_000;
  const chunk = evictions / 10;
  const rows = [];
  const targets = [];
  const raw = {};
  for (const algorithm of EVICTION_ALGORITHMS) {
    const runs = [];
    for (let r = 0; r < rounds; r++)
      runs.push(
        await runWorker(EVICTION_WORKER, [algorithm, String(maxKeys), String(evictions), String(chunk)], { cpu }),
      );
    raw[algorithm] = runs;
    const m = (field) => median(runs.map((x) => x[field]));
    const [before, at, first, last, max] = [m('beforeFull'), m('atCapacity'), m('first'), m('last'), m('max')];
    log(
      `  eviction ${algorithm}: ${before.toFixed(2)} µs/key before full, ${at.toFixed(2)} at capacity (last chunk ${last.toFixed(2)})`,
    );
    rows.push([
      algorithm === 'lockout' ? 'rl lockout (a new block per key)' : `rl ${algorithm}`,
      before,
      at,
      first,
      last,
      max,
      at / before,
      last / first,
    ]);
    targets.push({
      target: `eviction ${algorithm}: cost per key at capacity <= 2 x before the store fills`,
      value: at / before,
      ok: at / before <= 2,
    });
    targets.push({
      target: `eviction ${algorithm}: flat, the last ${chunk.toLocaleString('en')} evictions <= 2 x before the store fills`,
      value: last / before,
      ok: last / before <= 2,
    });
  }
  return {
    table: {
      caption: `eviction at maxKeys ${maxKeys.toLocaleString('en')}: µs per new distinct key (consumeSync), before the store fills and over ${evictions.toLocaleString('en')} evictions in chunks of ${chunk.toLocaleString('en')}, median of ${rounds} fresh processes`,
      headers: [
        'store',
        'µs/key before full',
        'at capacity',
        'first chunk',
        'last chunk',
        'worst chunk',
        'at capacity / before',
        'last / first',
      ],
      rows,
    },
    targets,
    raw,
  };
}
