// Two checkouts of rl side by side on one Redis: each row of section 3's worker
// (`sections/redis-worker.mjs ops <row> <port> <inflight> <warmMs> <runMs>`) run from each tree in turn,
// the trees' order alternating by round, each run a fresh Node process (client on core 1, Redis on
// core 0 when `taskset` is present). Not a test: the A/B behind a change to the Redis scripts or
// clients (bench/README.md, issue 26 part 3).
//
//   node bench/redis-trees-ab.mjs <before tree> [rounds] [rows, comma- or semicolon-separated (';' when a row's name has a comma), or -] [after tree]
//   e.g. git worktree add /tmp/rl-base <commit> (then install and build it), and
//        node bench/redis-trees-ab.mjs /tmp/rl-base 3
//   The after tree is this checkout unless given (a worktree of its own keeps other builds of this
//   checkout from emptying its dist/ during a run).
//
// Before each round Redis is emptied and every row's 100k keys are written once (unmeasured, by this
// tree's worker), so that every measured run finds states in place, as section 3's later rows do.
// A sliding log grows by a record per decision: its keys are deleted and written again before each
// of its runs, so that both trees find logs of the same length. Prints each run, then per row and
// tree the range of decisions/s, Redis CPU µs per decision (`INFO cpu`), script µs (`commandstats`),
// client CPU µs, and each tree's ratio to raw `EVALSHA` of its own round.
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { BENCH_DIR, runWorker, startRedis } from './lib/common.mjs';

const [otherTree, roundsArg, rowsArg, afterTree] = process.argv.slice(2);
if (!otherTree) {
  console.error('usage: node bench/redis-trees-ab.mjs <before tree> [rounds] [rows] [after tree]');
  process.exit(2);
}
const rounds = Number(roundsArg ?? 3);
const rows =
  rowsArg && rowsArg !== '-'
    ? rowsArg.split(rowsArg.includes(';') ? ';' : ',')
    : [
        'raw EVALSHA (return 1)',
        'rl token-bucket',
        'minimal read-modify-write script, batched',
        'rl token-bucket (node-redis 6)',
        'rl sliding-window-log',
      ];
const trees = { before: path.resolve(otherTree), after: path.resolve(afterTree ?? path.resolve(BENCH_DIR, '..')) };
const INFLIGHT = process.env.AB_INFLIGHT ?? '64';
const WARM = process.env.AB_WARM_MS ?? '300';
const RUN = process.env.AB_RUN_MS ?? '1500';
const worker = (tree) => path.join(tree, 'bench/sections/redis-worker.mjs');
const redis = await startRedis({ cpu: 0 });
const cli = (...args) =>
  spawnSync('redis-cli', ['-p', String(redis.port), ...args], { encoding: 'utf8' }).stdout.trim();
/** Deletes the sliding logs' keys (and their sums). */
const dropLogs = () =>
  cli(
    'EVAL',
    "local n = 0 local c = '0' repeat local r = redis.call('SCAN', c, 'MATCH', '*swl*', 'COUNT', 10000) c = r[1] for _, k in ipairs(r[2]) do redis.call('UNLINK', k) n = n + 1 end until c == '0' return n",
    '0',
  );
const results = {};
try {
  for (let r = 0; r < rounds; r++) {
    cli('FLUSHALL');
    // Every key written once (the run is long enough at 64 in flight for 100k keys on a quiet machine;
    // on a loaded one the first measured run still writes some).
    for (const row of rows.filter((x) => !x.startsWith('raw')))
      await runWorker(worker(trees.after), ['ops', row, String(redis.port), INFLIGHT, '2500', '100'], { cpu: 1 });
    const order = r % 2 ? ['after', 'before'] : ['before', 'after'];
    for (const row of rows) {
      for (const tree of order) {
        if (row.includes('sliding-window-log')) {
          dropLogs();
          await runWorker(worker(trees[tree]), ['ops', row, String(redis.port), INFLIGHT, '600', '100'], { cpu: 1 });
        }
        const res = await runWorker(worker(trees[tree]), ['ops', row, String(redis.port), INFLIGHT, WARM, RUN], {
          cpu: 1,
        });
        res.round = r;
        (results[`${row}|${tree}`] ??= []).push(res);
        console.log(
          `round ${r + 1} ${tree.padEnd(6)} ${row.padEnd(44)} ${(res.opsPerSec / 1000).toFixed(1).padStart(6)}k/s  redis ${res.redisUsPerOp.toFixed(2)} µs  script ${res.scriptUsPerOp.toFixed(2)} µs  client ${res.clientCpuUsPerOp.toFixed(2)} µs  calls/decision ${res.scriptCallsPerOp.toFixed(3)}`,
        );
      }
    }
  }
} finally {
  await redis.stop();
}
const range = (values, digits = 2) => {
  const v = values.filter(Number.isFinite).sort((a, b) => a - b);
  return v.length === 0
    ? '-'
    : v[0] === v.at(-1)
      ? v[0].toFixed(digits)
      : `${v[0].toFixed(digits)}–${v.at(-1).toFixed(digits)}`;
};
const raw = (tree, round) => results[`raw EVALSHA (return 1)|${tree}`]?.find((x) => x.round === round)?.opsPerSec;
console.log('\n| row | tree | decisions/s | × raw EVALSHA (same round) | Redis CPU µs | script µs | client CPU µs |');
console.log('| --- | --- | --- | --- | --- | --- | --- |');
for (const row of rows) {
  for (const tree of ['before', 'after']) {
    const s = results[`${row}|${tree}`] ?? [];
    console.log(
      `| ${row} | ${tree} | ${range(
        s.map((x) => x.opsPerSec / 1000),
        1,
      )}k | ${range(s.map((x) => x.opsPerSec / raw(tree, x.round)))} | ${range(s.map((x) => x.redisUsPerOp))} | ${range(s.map((x) => x.scriptUsPerOp))} | ${range(s.map((x) => x.clientCpuUsPerOp))} |`,
    );
  }
}
console.log('\nafter / before, per round (Redis CPU µs per decision; decisions/s):');
for (const row of rows) {
  const a = results[`${row}|after`] ?? [];
  const b = results[`${row}|before`] ?? [];
  const cpu = a.map((x, i) => x.redisUsPerOp / b[i]?.redisUsPerOp);
  const ops = a.map((x, i) => x.opsPerSec / b[i]?.opsPerSec);
  console.log(`  ${row.padEnd(44)} Redis CPU ${range(cpu)}  decisions/s ${range(ops)}`);
}
