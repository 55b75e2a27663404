// Section 4: HTTP requests per second, p50/p99 latency and server CPU per request with autocannon,
// for Express, Fastify and Koa: bare, with rl (memory, Redis), with the framework's usual peer, and a
// hand-written bucket with three headers. Server (and Redis) on core 0, load generator on core 1.
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { BENCH_DIR, builtExport, median, pinned, runWorker, startChild, startRedis, verdict } from '../lib/common.mjs';

const SERVER = path.join(BENCH_DIR, 'sections/http-server.mjs');
const LOAD = path.join(BENCH_DIR, 'sections/http-load.mjs');
export const title = '4. HTTP: requests per second, latency and server CPU per request';

const FRAMEWORKS = {
  express: { rl: '@rl/express', peer: 'express-rate-limit (+ rate-limit-redis)' },
  fastify: { rl: '@rl/fastify', peer: '@fastify/rate-limit' },
  koa: { rl: '@rl/koa', peer: 'koa-ratelimit' },
};

export async function run({ quick, log }) {
  const connections = 64;
  const warm = 1;
  // Two rounds, the second in reverse order, each row the median (mean) of its runs: a bare Express
  // request costs ~120 µs of CPU here and single runs move by ±10 %, more than the budgets measured.
  const rounds = quick ? 1 : 2;
  const seconds = quick ? 2 : 1;
  const haveRedis = spawnSync('redis-server', ['--version']).status === 0;
  const storeRedis = await builtExport('@rl/store-redis', 'RedisStore');
  const skippedRows = [];
  const redis = haveRedis ? await startRedis({ cpu: 0 }) : undefined;
  const results = {};
  const rows = [];
  const targets = [];
  try {
    for (const [fw, names] of Object.entries(FRAMEWORKS)) {
      const adapter = await builtExport(names.rl, 'rateLimit').catch(() => undefined) ?? (await import(names.rl).then((m) => m.rateLimit ?? m.default).catch(() => undefined));
      const variants = [['bare', 'allow'], ['hand', 'allow'], ['rl-memory', 'allow'], ['rl-observed', 'allow'], ['peer-memory', 'allow'], ['rl-redis', 'allow'], ['peer-redis', 'allow'],
        ['hand', 'deny'], ['rl-memory', 'deny'], ['peer-memory', 'deny'], ['rl-redis', 'deny'], ['peer-redis', 'deny'], ['bare', 'allow']];
      for (let round = 0; round < rounds; round++) for (const [variant, mode] of round % 2 ? [...variants].reverse() : variants) {
        const key = `${fw} ${variant} ${mode}`;
        const skip = (why) => { if (round === 0) skippedRows.push(`${key}: ${why}`); };
        if (variant.startsWith('rl-') && !adapter) { skip(`${names.rl} exports no rateLimit in its build`); continue; }
        if (variant.endsWith('redis') && !redis) { skip('redis-server is not on PATH'); continue; }
        if (variant === 'rl-redis' && !storeRedis) { skip('@rl/store-redis exports no RedisStore in its build'); continue; }
        const [cmd, argv] = pinned(0, process.execPath, [SERVER, fw, variant, mode, String(redis?.port ?? 0)]);
        let server;
        try {
          server = await startChild(cmd, argv);
          const port = Number(server.info);
          const r = await runWorker(LOAD, [String(port), String(connections), String(warm), String(seconds), String(server.child.pid)], { cpu: 1, timeoutMs: 60_000 });
          (results[key] ??= []).push(r);
        } catch (error) {
          skip(error.message.split('\n')[0]);
        } finally {
          server?.child.kill('SIGTERM');
          await new Promise((r) => (server?.child.exitCode !== null ? r() : server.child.once('exit', r)));
        }
      }
      log(`  ${fw} done`);
    }
  } finally {
    await redis?.stop();
  }
  const pick = (key, f) => median((results[key] ?? []).map((r) => r[f]));
  for (const fw of Object.keys(FRAMEWORKS)) {
    const bareRps = pick(`${fw} bare allow`, 'rps');
    const bareCpu = pick(`${fw} bare allow`, 'serverCpuUsPerReq');
    for (const variant of ['bare', 'hand', 'rl-memory', 'rl-observed', 'peer-memory', 'rl-redis', 'peer-redis']) {
      for (const mode of variant === 'bare' || variant === 'rl-observed' ? ['allow'] : ['allow', 'deny']) {
        const key = `${fw} ${variant} ${mode}`;
        if (!results[key]) continue;
        const rps = pick(key, 'rps');
        const cpu = pick(key, 'serverCpuUsPerReq');
        const label = variant.startsWith('peer') ? `${variant} (${FRAMEWORKS[fw].peer})` : variant;
        rows.push([fw, label, mode, rps, rps / bareRps, pick(key, 'p50'), pick(key, 'p99'), cpu, cpu - bareCpu, `${pick(key, 'status2xx')}/${pick(key, 'non2xx')}`]);
      }
    }
    const r = (v, m) => pick(`${fw} ${v} ${m}`, 'rps') / bareRps;
    const added = (v, m) => pick(`${fw} ${v} ${m}`, 'serverCpuUsPerReq') - bareCpu;
    if (results[`${fw} rl-memory allow`]) {
      targets.push({ target: `${fw} rl memory: >= 0.95 x bare req/s`, value: r('rl-memory', 'allow'), ok: r('rl-memory', 'allow') >= 0.95 });
      targets.push({ target: `${fw} rl memory: <= 8 us server CPU added per request`, value: added('rl-memory', 'allow'), ok: added('rl-memory', 'allow') <= 8 });
      targets.push({ target: `${fw} rl memory: deny path CPU <= allow path CPU`, value: `${added('rl-memory', 'deny').toFixed(1)} vs ${added('rl-memory', 'allow').toFixed(1)} us`, ok: added('rl-memory', 'deny') <= added('rl-memory', 'allow') });
    }
    if (results[`${fw} rl-observed allow`] && results[`${fw} rl-memory allow`]) {
      const extra = added('rl-observed', 'allow') - added('rl-memory', 'allow');
      targets.push({ target: `${fw} rl memory with an observer: <= 1 us server CPU per request over none`, value: extra, ok: extra <= 1 });
    }
    if (results[`${fw} rl-redis allow`]) {
      targets.push({ target: `${fw} rl Redis: >= 0.80 x bare req/s`, value: r('rl-redis', 'allow'), ok: r('rl-redis', 'allow') >= 0.8 });
      targets.push({ target: `${fw} rl Redis: <= 30 us server CPU added per request`, value: added('rl-redis', 'allow'), ok: added('rl-redis', 'allow') <= 30 });
      // Issue 15 (batching): Fastify and Koa within 15 µs on the Redis store.
      if (fw !== 'express') targets.push({ target: `${fw} rl Redis (batched): <= 15 us server CPU added per request`, value: added('rl-redis', 'allow'), ok: added('rl-redis', 'allow') <= 15 });
      targets.push({ target: `${fw} rl Redis: deny path CPU <= allow path CPU`, value: `${added('rl-redis', 'deny').toFixed(1)} vs ${added('rl-redis', 'allow').toFixed(1)} us`, ok: added('rl-redis', 'deny') <= added('rl-redis', 'allow') });
    }
  }
  if (rows.length === 0) return { skipped: skippedRows.join('; ') || 'nothing ran' };
  return {
    tables: [{
      caption: `autocannon, ${connections} connections, 3000-request warm-up (at most ${warm * 2} s) + ${seconds} s, GET / on 127.0.0.1; server and Redis on core 0, autocannon on core 1; 'allow': limit 10^9 per minute, 'deny': limit 1 per day (one client key: everything after the first request is rejected); rl and the peers use a fixed window; ${rounds} round(s), the second in reverse order; each row the median of its runs (bare runs first and last in each round); server CPU = utime+stime of the server process / requests`,
      headers: ['framework', 'variant', 'mode', 'req/s', '/bare', 'p50 ms', 'p99 ms', 'server CPU us/req', 'added us/req', '2xx/non-2xx'],
      rows,
    }],
    targets: targets.map((t) => ({ ...t, verdict: verdict(t.ok) })),
    notes: skippedRows.length ? `Not run: ${skippedRows.join('; ')}` : undefined,
    raw: results,
  };
}
