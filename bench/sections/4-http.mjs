// Section 4: HTTP requests per second, p50/p99 latency and server CPU per request with autocannon,
// for Express, Fastify and Koa: bare, with rl (memory, Redis), with the framework's usual peer, and a
// hand-written bucket with three headers. Server (and Redis) on core 0, load generator on core 1.
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { BENCH_DIR, builtExport, fmt, median, pinned, startChild, startRedis, verdict } from '../lib/common.mjs';
import { startLoad } from '../lib/http-load-client.mjs';

const SERVER = path.join(BENCH_DIR, 'sections/http-server.mjs');
export const title = '4. HTTP: requests per second, latency and server CPU per request';

const FRAMEWORKS = {
  express: { rl: '@rl/express', peer: 'express-rate-limit (+ rate-limit-redis)' },
  fastify: { rl: '@rl/fastify', peer: '@fastify/rate-limit' },
  koa: { rl: '@rl/koa', peer: 'koa-ratelimit' },
};

/** Requests whose heap allocation is measured, per server. */
const ALLOCATION_REQUESTS = 4000;
/** MB of each young-generation semi-space for the allocation runs: room for the measured requests without a collection. */
const SEMI_SPACE_MB = 512;

/**
 * Heap bytes the server allocates per request in the allow or deny `mode`, over `requests` requests
 * after a warm-up; NaN when a collection ran during them (the count would be short).
 */
export async function allocationPerRequest(load, fw, variant, mode, connections, requests) {
  const [cmd, argv] = pinned(0, process.execPath, [
    '--expose-gc',
    `--max-semi-space-size=${SEMI_SPACE_MB}`,
    `--min-semi-space-size=${SEMI_SPACE_MB}`,
    SERVER,
    fw,
    variant,
    mode,
    '0',
    '0',
  ]);
  const server = await startChild(cmd, argv, { env: { RL_BENCH_ALLOC: '1' }, stdin: 'pipe' });
  try {
    const port = Number(server.info);
    const pid = server.child.pid;
    await load.measure({ port, pid, connections, warmRequests: 3000, seconds: 0 });
    const answer = (command, pattern) =>
      new Promise((resolve) => {
        const check = () => {
          const m = server.output().match(pattern);
          if (m) {
            server.child.stdout.off('data', check);
            resolve(m);
          }
        };
        server.child.stdout.on('data', check);
        server.child.stdin.write(`${command}\n`);
      });
    await answer('mark', /MARKED\n/);
    const r = await load.measure({ port, pid, connections, warmRequests: 0, amount: requests });
    const [, bytes, collections] = await answer('read', /ALLOC (\d+) (\d+)\n/);
    return {
      bytesPerRequest: Number(collections) === 0 ? Number(bytes) / r.total : NaN,
      requests: r.total,
      collections: Number(collections),
    };
  } finally {
    server.child.kill('SIGTERM');
    await new Promise((r) => (server.child.exitCode !== null ? r() : server.child.once('exit', r)));
  }
}

export async function run({ quick, log }) {
  const connections = 64;
  // Every server of a framework runs at once, warmed up once; then `rounds` rounds measure each for
  // `seconds`, in alternating order, the bare server first and last in every round. A row is the
  // median over the rounds, and "added" the median of each round's difference to that round's bare
  // runs: on a shared machine a bare request's CPU drifts by more than the budgets within minutes,
  // so differences are taken seconds apart, between warm servers (docs/design/performance.md, "Measuring the
  // hot paths", also for the designs tried and dropped).
  const rounds = quick ? 1 : 5;
  const seconds = quick ? 1 : 0.5;
  const warmRequests = quick ? 2000 : 5000;
  const haveRedis = spawnSync('redis-server', ['--version']).status === 0;
  const storeRedis = await builtExport('@rl/store-redis', 'RedisStore');
  const skippedRows = [];
  const redis = haveRedis ? await startRedis({ cpu: 0 }) : undefined;
  const load = startLoad(1);
  const results = {};
  const allocations = {};
  const rows = [];
  const targets = [];
  const VARIANTS = [
    ['bare', 'allow'],
    ['hand', 'allow'],
    ['rl-memory', 'allow'],
    ['rl-observed', 'allow'],
    ['peer-memory', 'allow'],
    ['rl-redis', 'allow'],
    ['peer-redis', 'allow'],
    ['hand', 'deny'],
    ['rl-memory', 'deny'],
    ['peer-memory', 'deny'],
    ['rl-redis', 'deny'],
    ['peer-redis', 'deny'],
  ];
  try {
    for (const [fw, names] of Object.entries(FRAMEWORKS)) {
      const adapter =
        (await builtExport(names.rl, 'rateLimit').catch(() => undefined)) ??
        (await import(names.rl).then((m) => m.rateLimit ?? m.default).catch(() => undefined));
      const servers = new Map();
      try {
        let db = 0;
        for (const [variant, mode] of VARIANTS) {
          const key = `${fw} ${variant} ${mode}`;
          const skip = (why) => skippedRows.push(`${key}: ${why}`);
          if (variant.startsWith('rl-') && !adapter) {
            skip(`${names.rl} exports no rateLimit in its build`);
            continue;
          }
          if (variant.endsWith('redis') && !redis) {
            skip('redis-server is not on PATH');
            continue;
          }
          if (variant === 'rl-redis' && !storeRedis) {
            skip('@rl/store-redis exports no RedisStore in its build');
            continue;
          }
          const [cmd, argv] = pinned(0, process.execPath, [
            SERVER,
            fw,
            variant,
            mode,
            String(redis?.port ?? 0),
            String(variant.endsWith('redis') ? db++ : 0),
          ]);
          try {
            const server = await startChild(cmd, argv);
            servers.set(key, server);
            await load.measure({
              port: Number(server.info),
              pid: server.child.pid,
              connections,
              warmRequests,
              seconds: 0,
            });
          } catch (error) {
            skip(error.message.split('\n')[0]);
          }
        }
        const bareKey = `${fw} bare allow`;
        const order = [...servers.keys()].filter((key) => key !== bareKey);
        for (let round = 0; servers.has(bareKey) && round < rounds; round++) {
          // The bare server first and last in every round; the variants in alternating order between.
          for (const key of [bareKey, ...(round % 2 ? [...order].reverse() : order), bareKey]) {
            const server = servers.get(key);
            const r = await load.measure({
              port: Number(server.info),
              pid: server.child.pid,
              connections,
              warmRequests: 0,
              seconds,
            });
            (results[key] ??= []).push({ ...r, round });
          }
        }
      } finally {
        for (const server of servers.values()) {
          server.child.kill('SIGTERM');
          await new Promise((r) => (server.child.exitCode !== null ? r() : server.child.once('exit', r)));
        }
      }
      // Heap bytes each memory variant allocates per request: a count, not a time, so it holds on
      // a noisy machine. One server at a time (its young generation is made large enough to hold
      // the measured requests without a collection).
      for (const [variant, mode] of VARIANTS) {
        if (variant.endsWith('redis') || (variant.startsWith('rl-') && !adapter)) continue;
        const key = `${fw} ${variant} ${mode}`;
        try {
          allocations[key] = await allocationPerRequest(
            load,
            fw,
            variant,
            mode,
            connections,
            quick ? 1000 : ALLOCATION_REQUESTS,
          );
        } catch (error) {
          skippedRows.push(`${key} (allocation): ${error.message.split('\n')[0]}`);
        }
      }
      log(`  ${fw} done`);
    }
  } finally {
    await load.stop();
    await redis?.stop();
  }
  const pick = (key, f) => median((results[key] ?? []).map((r) => r[f]));
  /** The bare server's CPU per request in `round`: the mean of its first and last run. */
  const bareIn = (fw, round) => {
    const runs = (results[`${fw} bare allow`] ?? []).filter((x) => x.round === round);
    return {
      cpu: runs.reduce((sum, x) => sum + x.serverCpuUsPerReq, 0) / runs.length,
      rps: runs.reduce((sum, x) => sum + x.rps, 0) / runs.length,
    };
  };
  /**
   * Per round: the server CPU per request of `key` minus the bare server's in that round; with
   * `base`, minus `base`'s in the same round instead (rl against the hand bucket or the peer).
   */
  const roundDiffs = (key, base) => {
    const diffs = [];
    for (const r of results[key] ?? []) {
      if (base === undefined) diffs.push(r.serverCpuUsPerReq - bareIn(key.split(' ')[0], r.round).cpu);
      else
        for (const b of (results[base] ?? []).filter((x) => x.round === r.round))
          diffs.push(r.serverCpuUsPerReq - b.serverCpuUsPerReq);
    }
    return diffs;
  };
  /** req/s of `key` over the bare server's in the same round, median over the rounds. */
  const rpsOverBare = (key) => median((results[key] ?? []).map((r) => r.rps / bareIn(key.split(' ')[0], r.round).rps));
  const range = (values) =>
    values.length === 0 ? '-' : `${fmt(Math.min(...values), 1)} … ${fmt(Math.max(...values), 1)}`;
  for (const fw of Object.keys(FRAMEWORKS)) {
    for (const variant of ['bare', 'hand', 'rl-memory', 'rl-observed', 'peer-memory', 'rl-redis', 'peer-redis']) {
      for (const mode of variant === 'bare' || variant === 'rl-observed' ? ['allow'] : ['allow', 'deny']) {
        const key = `${fw} ${variant} ${mode}`;
        if (!results[key]) continue;
        const rps = pick(key, 'rps');
        const cpu = pick(key, 'serverCpuUsPerReq');
        const diffs = variant === 'bare' ? [] : roundDiffs(key);
        const label = variant.startsWith('peer') ? `${variant} (${FRAMEWORKS[fw].peer})` : variant;
        rows.push([
          fw,
          label,
          mode,
          rps,
          variant === 'bare' ? 1 : rpsOverBare(key),
          pick(key, 'p50'),
          pick(key, 'p99'),
          cpu,
          variant === 'bare' ? 0 : median(diffs),
          range(diffs),
          `${pick(key, 'status2xx')}/${pick(key, 'non2xx')}`,
        ]);
      }
    }
    const r = (v, m) => rpsOverBare(`${fw} ${v} ${m}`);
    const added = (v, m) => median(roundDiffs(`${fw} ${v} ${m}`));
    if (results[`${fw} rl-memory allow`]) {
      targets.push({
        target: `${fw} rl memory: >= 0.95 x bare req/s`,
        value: r('rl-memory', 'allow'),
        ok: r('rl-memory', 'allow') >= 0.95,
      });
      targets.push({
        target: `${fw} rl memory: <= 8 us server CPU added per request`,
        value: added('rl-memory', 'allow'),
        ok: added('rl-memory', 'allow') <= 8,
      });
      targets.push({
        target: `${fw} rl memory: deny path CPU <= allow path CPU`,
        value: `${added('rl-memory', 'deny').toFixed(1)} vs ${added('rl-memory', 'allow').toFixed(1)} us`,
        ok: added('rl-memory', 'deny') <= added('rl-memory', 'allow'),
      });
    }
    // Issue 16: at most the hand bucket's + 3 µs, and below the framework's usual peer, on both paths.
    for (const mode of ['allow', 'deny']) {
      if (!results[`${fw} rl-memory ${mode}`]) continue;
      const overHand = median(roundDiffs(`${fw} rl-memory ${mode}`, `${fw} hand ${mode}`));
      if (results[`${fw} hand ${mode}`])
        targets.push({
          target: `${fw} rl memory, ${mode}: added CPU <= the hand bucket's + 3 us`,
          value: `${overHand >= 0 ? '+' : ''}${overHand.toFixed(2)} us`,
          ok: overHand <= 3,
        });
      const overPeer = median(roundDiffs(`${fw} rl-memory ${mode}`, `${fw} peer-memory ${mode}`));
      if (results[`${fw} peer-memory ${mode}`])
        targets.push({
          target: `${fw} rl memory, ${mode}: added CPU below ${FRAMEWORKS[fw].peer.split(' ')[0]}'s`,
          value: `${overPeer >= 0 ? '+' : ''}${overPeer.toFixed(2)} us`,
          ok: overPeer < 0,
        });
    }
    if (results[`${fw} rl-observed allow`] && results[`${fw} rl-memory allow`]) {
      const extra = median(roundDiffs(`${fw} rl-observed allow`, `${fw} rl-memory allow`));
      targets.push({
        target: `${fw} rl memory with an observer: <= 1 us server CPU per request over none`,
        value: extra,
        ok: extra <= 1,
      });
    }
    if (results[`${fw} rl-redis allow`]) {
      targets.push({
        target: `${fw} rl Redis: >= 0.80 x bare req/s`,
        value: r('rl-redis', 'allow'),
        ok: r('rl-redis', 'allow') >= 0.8,
      });
      targets.push({
        target: `${fw} rl Redis: <= 30 us server CPU added per request`,
        value: added('rl-redis', 'allow'),
        ok: added('rl-redis', 'allow') <= 30,
      });
      // Issue 15 (batching): Fastify and Koa within 15 µs on the Redis store.
      if (fw !== 'express')
        targets.push({
          target: `${fw} rl Redis (batched): <= 15 us server CPU added per request`,
          value: added('rl-redis', 'allow'),
          ok: added('rl-redis', 'allow') <= 15,
        });
      targets.push({
        target: `${fw} rl Redis: deny path CPU <= allow path CPU`,
        value: `${added('rl-redis', 'deny').toFixed(1)} vs ${added('rl-redis', 'allow').toFixed(1)} us`,
        ok: added('rl-redis', 'deny') <= added('rl-redis', 'allow'),
      });
    }
  }
  const allocationRows = [];
  for (const fw of Object.keys(FRAMEWORKS)) {
    const bare = allocations[`${fw} bare allow`]?.bytesPerRequest;
    for (const [variant, mode] of [
      ['bare', 'allow'],
      ['hand', 'allow'],
      ['rl-memory', 'allow'],
      ['rl-observed', 'allow'],
      ['peer-memory', 'allow'],
      ['hand', 'deny'],
      ['rl-memory', 'deny'],
      ['peer-memory', 'deny'],
    ]) {
      const a = allocations[`${fw} ${variant} ${mode}`];
      if (a === undefined) continue;
      const hand = allocations[`${fw} hand ${mode}`]?.bytesPerRequest;
      const label = variant.startsWith('peer') ? `${variant} (${FRAMEWORKS[fw].peer})` : variant;
      allocationRows.push([
        fw,
        label,
        mode,
        Math.round(a.bytesPerRequest),
        Math.round(a.bytesPerRequest - bare),
        variant === 'bare' || variant === 'hand' ? '-' : Math.round(a.bytesPerRequest - hand),
        a.requests,
        String(a.collections),
      ]);
    }
  }
  if (rows.length === 0) return { skipped: skippedRows.join('; ') || 'nothing ran' };
  return {
    tables: [
      {
        caption: `autocannon, ${connections} connections, GET / on 127.0.0.1; servers and Redis on core 0, autocannon on core 1 (one process for the section); 'allow': limit 10^9 per minute, 'deny': limit 1 per day (one client key: everything after the first request is rejected); rl and the peers use a fixed window. Every server of a framework runs at once, each warmed by ${warmRequests} requests, then ${rounds} round(s) of ${seconds} s per server in alternating order, the bare server first and last in each round. Each row is the median over the rounds; server CPU per request = the server process's run time (all threads, /proc schedstat) / requests; /bare and "added" are against the same round's bare runs, "added range" the lowest and highest round`,
        headers: [
          'framework',
          'variant',
          'mode',
          'req/s',
          '/bare',
          'p50 ms',
          'p99 ms',
          'server CPU us/req',
          'added us/req',
          'added range',
          '2xx/non-2xx',
        ],
        rows,
      },
      {
        caption: `heap bytes the server allocates per request (V8 used heap after the requests minus before, no collection in between: the young generation set to ${SEMI_SPACE_MB} MB), over ${quick ? 1000 : ALLOCATION_REQUESTS} requests after a 3000-request warm-up, one server at a time; a count, not a time`,
        headers: ['framework', 'variant', 'mode', 'bytes/req', 'over bare', 'over hand', 'requests', 'collections'],
        rows: allocationRows,
      },
    ],
    targets: targets.map((t) => ({ ...t, verdict: verdict(t.ok) })),
    notes: skippedRows.length ? `Not run: ${skippedRows.join('; ')}` : undefined,
    raw: { cpu: results, allocations },
  };
}
