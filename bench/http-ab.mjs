// An A/B of the HTTP hot paths in one server process: every variant of a framework is an app of its
// own (its own port) in the same Node process, so that they share the JIT, the heap and the machine's
// moment; the load generator alternates short slices between them, the bare app first and last in
// every round. Section 4 runs each variant in a process of its own (what a user runs); this separates
// differences smaller than the drift between processes on a shared machine.
// Usage (after a build): node bench/http-ab.mjs [frameworks=express,fastify,koa] [rounds=15] [sliceSeconds=0.3]
// (AB_VARIANTS=bare:allow,hand:allow,... picks the apps; the first is the bare one every round begins and ends with.)
// Prints, per framework and variant, the server CPU per request over the bare app and over the hand
// bucket (median of the rounds' differences, with the quartiles).
import path from 'node:path';
import { BENCH_DIR, fmt, median, pinned, startChild, table } from './lib/common.mjs';
import { startLoad } from './lib/http-load-client.mjs';
import { percentile } from './experiment/stats.mjs';

const frameworks = (process.argv[2] ?? 'express,fastify,koa').split(',');
const rounds = Number(process.argv[3] ?? 15);
const seconds = Number(process.argv[4] ?? 0.3);
const VARIANTS = process.env.AB_VARIANTS
  ? process.env.AB_VARIANTS.split(',')
  : [
      'bare:allow',
      'hand:allow',
      'rl-memory:allow',
      'peer-memory:allow',
      'hand:deny',
      'rl-memory:deny',
      'peer-memory:deny',
    ];
const connections = 64;

/** The first and third quartiles of `values` (nearest rank), as "q1 … q3". */
const quartiles = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return `${fmt(percentile(sorted, 25), 1)} … ${fmt(percentile(sorted, 75), 1)}`;
};

const load = startLoad(1);
const rows = [];
try {
  for (const fw of frameworks) {
    const [cmd, argv] = pinned(0, process.execPath, [
      path.join(BENCH_DIR, 'sections/http-server.mjs'),
      fw,
      VARIANTS.join(','),
      'allow',
    ]);
    const server = await startChild(cmd, argv);
    try {
      const ports = server.info.split(',').map(Number);
      const pid = server.child.pid;
      for (const port of ports) await load.measure({ port, pid, connections, warmRequests: 5000, seconds: 0 });
      const cpu = VARIANTS.map(() => []);
      const order = VARIANTS.slice(1).map((_, i) => i + 1);
      for (let round = 0; round < rounds; round++) {
        const sequence = [0, ...(round % 2 ? [...order].reverse() : order), 0];
        const perRound = VARIANTS.map(() => []);
        for (const i of sequence) {
          const r = await load.measure({ port: ports[i], pid, connections, warmRequests: 0, seconds });
          perRound[i].push(r.serverCpuUsPerReq);
        }
        perRound.forEach((runs, i) => cpu[i].push(runs.reduce((a, b) => a + b, 0) / runs.length));
      }
      const diffs = (i, base) => cpu[i].map((x, round) => x - cpu[base][round]);
      for (let i = 0; i < VARIANTS.length; i++) {
        const hand = VARIANTS.indexOf(`hand:${VARIANTS[i].split(':')[1]}`);
        const overHand = i > 0 && hand >= 0 && hand !== i;
        rows.push([
          fw,
          VARIANTS[i],
          median(cpu[i]),
          Math.min(...cpu[i]),
          i === 0 ? '-' : median(diffs(i, 0)),
          i === 0 ? '-' : quartiles(diffs(i, 0)),
          overHand ? median(diffs(i, hand)) : '-',
          overHand ? quartiles(diffs(i, hand)) : '-',
          overHand ? Math.min(...cpu[i]) - Math.min(...cpu[hand]) : '-',
        ]);
      }
      console.error(`${fw} done`);
    } finally {
      server.child.kill('SIGTERM');
    }
  }
} finally {
  await load.stop();
}
console.log(
  `${rounds} rounds of ${seconds} s per app, ${connections} connections, one server process per framework (core 0), autocannon on core 1`,
);
console.log(
  table(
    [
      'framework',
      'variant',
      'server CPU us/req',
      'lowest round',
      'over bare',
      'over bare, quartiles',
      'over hand',
      'over hand, quartiles',
      "lowest over hand's lowest",
    ],
    rows,
  ),
);
