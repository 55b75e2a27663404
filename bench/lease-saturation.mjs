// Quota leases at saturation (issue 39): N processes hammer ONE key on a private Redis, with and
// without `lease: { units }`, for each leasable algorithm. Prints, per row: admitted, the algorithm's
// bound over the run counted from the start (Redis TIME before the first request and after the last),
// over-admission against it (must be 0), script calls Redis ran (INFO commandstats: EVALSHA + EVAL)
// per admitted request, and the decisions denied locally. Counts, not times: trust them on a loaded
// machine. Not a test (packages/store-redis/test/lease-saturation.test.ts is the test).
//
//   node bench/lease-saturation.mjs                                   # every algorithm, lease and none
//   node bench/lease-saturation.mjs --algorithms=token-bucket --seconds=1
//   node bench/lease-saturation.mjs --root=/work/main                 # also another checkout's build, A/B
//   node bench/lease-saturation.mjs --processes=4 --consumers=16 --units=50 --gap=1
//   node bench/lease-saturation.mjs --timeout=false                   # no failure policy (a loaded machine)
//
// Every process runs `consumers` loops of `await limiter.consume(key)`, each waiting `gap` ms between
// requests (default 1: about 16,000 requests a second per process, 60 times the limit from 4 processes),
// as requests arriving on sockets do; `--gap=0` yields one turn of the event loop (setImmediate)
// instead, a spin that on a 2-core machine starves Redis into the limiter's timeout. The limiter has
// the defaults users get (the deny cache, the 50 ms timeout, batching); decisions of the failure policy
// are counted ("failed"), not expected. RL_BENCH_DEBUG=1 prints each charge's answer on stderr.
import { fork } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROOT_DIR, startRedis, table } from './lib/common.mjs';

const SCRIPT = fileURLToPath(import.meta.url);

/** The algorithms, each about 1000 units per second with a burst of 200, and the span it bounds. */
const ALGORITHMS = {
  'token-bucket': (core) => core.tokenBucket({ capacity: 200, refillRate: 1000 }),
  'leaky-bucket': (core) => core.leakyBucket({ capacity: 200, leakRate: 1000 }),
  'fixed-window': (core) => core.fixedWindow({ limit: 200, window: 200 }),
  'sliding-window-log': (core) => core.slidingWindowLog({ limit: 200, window: 200 }),
  'sliding-window-counter': (core) => core.slidingWindowCounter({ limit: 200, window: 200 }),
};
const WINDOW_MS = 200;

function args() {
  const o = {
    algorithms: Object.keys(ALGORITHMS),
    seconds: 2,
    processes: 4,
    consumers: 16,
    units: 50,
    gap: 1,
    timeout: 'default',
    roots: [],
  };
  for (const a of process.argv.slice(2)) {
    const [k, v] = a.replace(/^--/, '').split('=');
    if (k === 'algorithms') o.algorithms = v.split(',');
    else if (k === 'root') o.roots.push(path.resolve(v));
    else if (k === 'timeout') o.timeout = v === 'false' ? false : Number(v);
    else if (k in o) o[k] = Number(v);
    else throw new Error(`unknown argument ${a}`);
  }
  return o;
}

/** The packages of the checkout at `root` (its built CommonJS entries). */
function packagesOf(root) {
  const require = createRequire(path.join(root, 'bench', 'package.json'));
  return {
    core: require('@rl/core'),
    RedisStore: require('@rl/store-redis').RedisStore,
    Redis: require('ioredis').Redis,
  };
}

/** One process: waits for `go`, hammers the key for `ms`, reports its counts. */
async function child() {
  const job = await new Promise((resolve) => process.once('message', resolve));
  const { core, RedisStore, Redis } = packagesOf(job.root);
  const client = new Redis(job.port, '127.0.0.1');
  const store = new RedisStore({ client, prefix: job.prefix });
  // Charges the limiter hands the store (a batch script carries several); with RL_BENCH_DEBUG=1 each
  // charge's answer is printed on stderr: blocks (cost above 1) and requests charged alone.
  let charges = 0;
  const charge = store.charge.bind(store);
  store.charge = (c, now) => {
    charges++;
    const answer = charge(c, now);
    if (process.env.RL_BENCH_DEBUG) {
      const sent = performance.now();
      Promise.resolve(answer).then(
        ({ decision: d }) =>
          console.error(
            `${process.pid} ${sent.toFixed(1)} +${(performance.now() - sent).toFixed(1)} ${c.cost > 1 ? 'block' : 'alone'} ${c.cost} ${d.allowed} retry ${d.retryAfterMs} remaining ${d.remaining} ${d.reason ?? ''}`,
          ),
        () => undefined,
      );
    }
    return answer;
  };
  const algorithm = ALGORITHMS[job.algorithm](core);
  const limiter = core.createLimiter({
    algorithm,
    store,
    prefix: 'sat',
    ...(job.units > 0 && { lease: { units: job.units } }),
    ...(job.timeout !== 'default' && { timeout: job.timeout }),
  });
  await client.ping();
  const counts = { admitted: 0, decisions: 0, local: 0, failed: 0, byWindow: {} };
  process.send({ ready: true });
  await new Promise((resolve) => process.once('message', resolve));
  const until = performance.now() + job.ms;
  const turn =
    job.gap > 0
      ? () => new Promise((resolve) => setTimeout(resolve, job.gap))
      : () => new Promise((resolve) => setImmediate(resolve));
  await Promise.all(
    Array.from({ length: job.consumers }, async () => {
      while (performance.now() < until) {
        const d = await limiter.consume('hot');
        counts.decisions++;
        if (d.reason === 'timeout' || d.reason === 'store-error') counts.failed++;
        else if (d.reason === 'deny-cache') counts.local++;
        if (d.allowed) {
          counts.admitted++;
          // A leased decision's `at` is its block's: the window it was counted in.
          const w = Math.floor(d.at / WINDOW_MS);
          counts.byWindow[w] = (counts.byWindow[w] ?? 0) + 1;
        }
        await turn();
      }
    }),
  );
  await limiter.close();
  client.disconnect();
  process.send({ counts: { ...counts, charges } });
}

async function redisTime(client) {
  const [s, us] = await client.time();
  return Number(s) * 1000 + Number(us) / 1000;
}

async function scriptCalls(client) {
  const info = await client.info('commandstats');
  let calls = 0;
  for (const command of ['evalsha', 'eval'])
    calls += Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(info)?.[1] ?? 0);
  return calls;
}

/** The most `algorithm` admits in `[start, start + spanMs)` counted from its first request. */
function boundOf(algorithm, spanMs) {
  const bound = algorithm.boundInSpan(spanMs);
  // The sliding counter states no bound (an estimate); each aligned window it meets counts at most the limit.
  return bound ?? algorithm.limit * (Math.ceil(spanMs / WINDOW_MS) + 1);
}

async function scenario(o, redis, client, root, algorithmName, units) {
  const prefix = `sat:${algorithmName}:${units}:${Date.now()}:`;
  const children = Array.from({ length: o.processes }, () => fork(SCRIPT, ['--child'], { stdio: 'inherit' }));
  const message = (c, key) =>
    new Promise((resolve, reject) => {
      const on = (m) => {
        if (m[key] === undefined) return;
        c.off('message', on);
        resolve(m[key]);
      };
      c.on('message', on);
      c.once('exit', (code) => code !== 0 && reject(new Error(`child exited ${code}`)));
    });
  try {
    const job = {
      root,
      port: redis.port,
      prefix,
      algorithm: algorithmName,
      units,
      consumers: o.consumers,
      gap: o.gap,
      timeout: o.timeout,
      ms: o.seconds * 1000,
    };
    const ready = children.map((c) => message(c, 'ready'));
    for (const c of children) c.send(job);
    await Promise.all(ready);
    const done = children.map((c) => message(c, 'counts'));
    const calls0 = await scriptCalls(client);
    const t0 = await redisTime(client);
    for (const c of children) c.send('go');
    const counts = await Promise.all(done);
    const t1 = await redisTime(client);
    const calls = (await scriptCalls(client)) - calls0;
    const { core } = packagesOf(root);
    const algorithm = ALGORITHMS[algorithmName](core);
    const sum = (f) => counts.reduce((s, c) => s + f(c), 0);
    const admitted = sum((c) => c.admitted);
    const bound = boundOf(algorithm, t1 - t0);
    let windowOver = 0;
    if (algorithmName === 'fixed-window') {
      const perWindow = {};
      for (const c of counts) for (const [w, n] of Object.entries(c.byWindow)) perWindow[w] = (perWindow[w] ?? 0) + n;
      for (const n of Object.values(perWindow)) windowOver = Math.max(windowOver, n - algorithm.limit);
      if (process.env.RL_BENCH_DEBUG) console.error(JSON.stringify(perWindow));
    }
    return {
      build: root === ROOT_DIR ? 'this' : path.basename(root),
      algorithm: algorithmName,
      lease: units > 0 ? `units ${units}` : 'none',
      admitted,
      bound,
      over: Math.max(0, admitted - bound, windowOver),
      under: Math.max(0, bound - admitted),
      calls,
      charges: sum((c) => c.charges),
      decisions: sum((c) => c.decisions),
      local: sum((c) => c.local),
      failed: sum((c) => c.failed),
      perAdmitted: calls / Math.max(1, admitted),
    };
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  }
}

async function main() {
  const o = args();
  const redis = await startRedis({ cpu: 0 });
  const { Redis } = packagesOf(ROOT_DIR);
  const client = new Redis(redis.port, '127.0.0.1');
  const rows = [];
  try {
    for (const algorithmName of o.algorithms) {
      // Interleaved: each build's lease row beside the others', then no lease.
      for (const units of [o.units, 0])
        for (const root of [ROOT_DIR, ...o.roots]) {
          if (units === 0 && root !== ROOT_DIR) continue;
          const r = await scenario(o, redis, client, root, algorithmName, units);
          rows.push(r);
          console.error(`${r.build} ${r.algorithm} lease ${r.lease}: ${r.admitted} admitted, ${r.calls} script calls`);
        }
    }
  } finally {
    client.disconnect();
    await redis.stop();
  }
  console.log(
    `\n${o.processes} processes × ${o.consumers} consumers on one key, ${o.seconds} s each, Redis ${redis.port}\n`,
  );
  console.log(
    table(
      [
        'build',
        'algorithm',
        'lease',
        'admitted',
        'bound',
        'over',
        'under',
        'script calls',
        'calls/admitted',
        'charges',
        'decisions',
        'denied locally',
        'failed',
      ],
      rows.map((r) => [
        r.build,
        r.algorithm,
        r.lease,
        String(r.admitted),
        String(r.bound),
        String(r.over),
        String(r.under),
        String(r.calls),
        r.perAdmitted.toFixed(3),
        String(r.charges),
        String(r.decisions),
        String(r.local),
        String(r.failed),
      ]),
    ),
  );
  if (rows.some((r) => r.over > 0)) process.exitCode = 1;
}

if (process.argv.includes('--child')) await child();
else await main();
