// The noise floor of section 4: several server processes of the *same* variant, measured the way
// section 4 measures different ones (each its own process, all warm at once, alternating slices, the
// first bare process first and last in every round). Whatever separates two identical processes
// separates section 4's rows as well, whatever the middleware does.
// Usage (after a build): node bench/http-twins.mjs [framework=express] [rounds=5] [sliceSeconds=0.5]
// (TWINS=bare:allow:4,hand:allow:3,rl-memory:allow:3 picks the variants, modes and process counts;
// the first process of the first entry is the bare one every round begins and ends with;
// TWINS_NODE_FLAGS=--max-semi-space-size=64 passes flags to every server's node.)
// Prints, per process, its server CPU per request (median of the rounds) and its "added" CPU over
// the first process as section 4 computes it (median of the rounds' differences), then per variant
// the spread of its processes' "added" figures.
import path from 'node:path';
import { BENCH_DIR, fmt, median, pinned, startChild, table } from './lib/common.mjs';
import { startLoad } from './lib/http-load-client.mjs';

const framework = process.argv[2] ?? 'express';
const rounds = Number(process.argv[3] ?? 5);
const seconds = Number(process.argv[4] ?? 0.5);
const connections = 64;
const nodeFlags = (process.env.TWINS_NODE_FLAGS ?? '').split(' ').filter(Boolean);
const twins = (process.env.TWINS ?? 'bare:allow:4,hand:allow:3,rl-memory:allow:3').split(',').flatMap((entry) => {
  const [variant, mode, count = '1'] = entry.split(':');
  return Array.from({ length: Number(count) }, (_, i) => ({ variant, mode, label: `${variant}:${mode} #${i + 1}` }));
});

const load = startLoad(1);
const servers = [];
try {
  for (const twin of twins) {
    const [cmd, argv] = pinned(0, process.execPath, [
      ...nodeFlags,
      path.join(BENCH_DIR, 'sections/http-server.mjs'),
      framework,
      twin.variant,
      twin.mode,
    ]);
    const server = await startChild(cmd, argv);
    servers.push({ ...twin, server, port: Number(server.info), cpu: [] });
  }
  for (const s of servers)
    await load.measure({ port: s.port, pid: s.server.child.pid, connections, warmRequests: 5000, seconds: 0 });
  const order = servers.slice(1);
  for (let round = 0; round < rounds; round++) {
    const runs = new Map(servers.map((s) => [s, []]));
    for (const s of [servers[0], ...(round % 2 ? [...order].reverse() : order), servers[0]]) {
      const r = await load.measure({ port: s.port, pid: s.server.child.pid, connections, warmRequests: 0, seconds });
      runs.get(s).push(r.serverCpuUsPerReq);
    }
    for (const [s, values] of runs) s.cpu.push(values.reduce((a, b) => a + b, 0) / values.length);
  }
} finally {
  for (const s of servers) s.server.child.kill('SIGTERM');
  await load.stop();
}
const base = servers[0];
const added = (s) => median(s.cpu.map((x, round) => x - base.cpu[round]));
console.log(
  `${framework}: ${servers.length} server processes${nodeFlags.length ? ` (node ${nodeFlags.join(' ')})` : ''}, ${rounds} rounds of ${seconds} s each, ${connections} connections, servers on core 0, autocannon on core 1`,
);
console.log(
  table(
    ['process', 'server CPU us/req', 'lowest round', 'highest round', 'added over ' + base.label],
    servers.map((s) => [s.label, median(s.cpu), Math.min(...s.cpu), Math.max(...s.cpu), s === base ? '-' : added(s)]),
  ),
);
const byVariant = new Map();
for (const s of servers.slice(1))
  byVariant.set(`${s.variant}:${s.mode}`, [...(byVariant.get(`${s.variant}:${s.mode}`) ?? []), added(s)]);
console.log(
  table(
    ['variant', 'processes', '"added" per process', 'spread'],
    [...byVariant].map(([v, xs]) => [
      v,
      xs.length,
      xs.map((x) => fmt(x, 1)).join(' / '),
      Math.max(...xs) - Math.min(...xs),
    ]),
  ),
);
