// Two builds of @rl/store-redis against one Redis, for a change that must leave the Redis data as it was
// (the wire protocol between the store and its scripts may change; the keys and values may not).
//
//   node bench/redis-wire-ab.mjs <other checkout> [operations=3000] [seed=1]
//
// `<other checkout>` is a built clone of the repository (for example of the commit before a change:
// `git clone . /tmp/rl-before && cd /tmp/rl-before && pnpm install && pnpm build`). One random
// sequence of operations (consume, reserve, peek, undo with and without the charge's time and delay,
// reset, acquire, release; every algorithm, with and without a lockout, the first configurations
// inline and the later ones by argument; in groups issued together, so batching runs) is run three
// times on one Redis, with the limiter's explicit clock: by the other build alone (prefix `a:`), by
// this one alone (`b:`), and alternating between the two, operation by operation (`c:`). Every
// decision must be the same in the three; at the end every Redis key of the three namespaces must
// hold the same value, byte for byte, except the `kept` double that opens a compact state (a time on
// Redis's own clock, which moved between the runs: compared within 2 s, as the keys' TTLs). Exits 1
// on a difference, printing the first few.
import { pathToFileURL } from 'node:url';
import path from 'node:path';
import { createRequire } from 'node:module';
import { ROOT_DIR, startRedis } from './lib/common.mjs';

const [otherRoot, countArg = '3000', seedArg = '1'] = process.argv.slice(2);
if (otherRoot === undefined) {
  console.error('usage: node bench/redis-wire-ab.mjs <other built checkout> [operations] [seed]');
  process.exit(2);
}
const COUNT = Number(countArg);
let seed = Number(seedArg);
const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
const pick = (list) => list[Math.floor(random() * list.length)];

/** One build: its core (algorithm factories, withBlock) and its RedisStore. */
async function build(root) {
  const url = (rel) => pathToFileURL(path.join(root, rel)).href;
  const core = await import(url('packages/core/dist/index.js'));
  const storeKit = await import(url('packages/core/dist/store/index.js'));
  const redis = await import(url('packages/store-redis/dist/index.js'));
  return { core, withBlock: storeKit.withBlock, RedisStore: redis.RedisStore };
}
const builds = { a: await build(path.resolve(otherRoot)), b: await build(ROOT_DIR) };
const require = createRequire(path.join(ROOT_DIR, 'bench', 'package.json'));
const { default: Redis } = await import(pathToFileURL(require.resolve('ioredis')).href);

/** The configurations: each a recipe applied to a build's factories, so both builds make the same algorithm. */
function configurations() {
  const list = [];
  for (let i = 0; i < 90; i++) {
    const limit = 2 + Math.floor(random() * 6);
    const window = pick([1000, 2000, 5000]);
    const kind = pick([
      'fixedWindow',
      'slidingWindowLog',
      'slidingWindowCounter',
      'tokenBucket',
      'leakyBucket',
      'leakyShaper',
      'concurrency',
    ]);
    const blockMs = kind !== 'concurrency' && random() < 0.2 ? pick([500, 3000]) : 0;
    list.push({ kind, limit, window, blockMs });
  }
  return list;
}
function make(b, { kind, limit, window, blockMs }) {
  const f = b.core;
  const algorithm =
    kind === 'fixedWindow'
      ? f.fixedWindow({ limit, window })
      : kind === 'slidingWindowLog'
        ? f.slidingWindowLog({ limit, window, countDenied: limit % 2 === 0 })
        : kind === 'slidingWindowCounter'
          ? f.slidingWindowCounter({ limit, window })
          : kind === 'tokenBucket'
            ? f.tokenBucket({ capacity: limit, refillRate: limit, interval: window })
            : kind === 'leakyBucket'
              ? f.leakyBucket({ capacity: limit, leakRate: limit, interval: window })
              : kind === 'leakyShaper'
                ? f.leakyBucket({ capacity: limit, leakRate: limit, interval: window, mode: 'shape' })
                : f.concurrency({ limit, lease: window });
  return blockMs > 0 ? b.withBlock(algorithm, blockMs) : algorithm;
}

const configs = configurations();
const algorithms = { a: configs.map((c) => make(builds.a, c)), b: configs.map((c) => make(builds.b, c)) };
const keys = ['k1', 'k2', 'k3', 'user:42', 'a-long-key-'.repeat(30), 'ünïcode'];

/** The operations: each names its configuration, key, cost and arguments, and is issued in a group. */
const operations = [];
let now = 1_800_000_000_000;
for (let i = 0; i < COUNT; i++) {
  now += Math.floor(random() * 400);
  const config = Math.floor(random() * configs.length);
  const leases = configs[config].kind === 'concurrency';
  const op = leases
    ? pick(['acquire', 'acquire', 'release', 'peek', 'reset'])
    : pick(['consume', 'consume', 'consume', 'reserve', 'peek', 'undo', 'undo-at', 'reset']);
  operations.push({
    op,
    config,
    key: pick(keys),
    cost: leases ? 1 : pick([1, 1, 2, 3]),
    now,
    group: random() < 0.6 ? 0 : 1,
    lease: `lease.${Math.floor(random() * 4)}`,
    fraction: pick([0, 0.25, 1]),
  });
}

const server = await startRedis();
const client = new Redis({ port: server.port, host: '127.0.0.1', lazyConnect: false });
const stores = {
  a: new builds.a.RedisStore({ client, prefix: 'a:' }),
  b: new builds.b.RedisStore({ client, prefix: 'b:' }),
  ca: new builds.a.RedisStore({ client, prefix: 'c:' }),
  cb: new builds.b.RedisStore({ client, prefix: 'c:' }),
};
/** The last decision of each key and configuration, for the undos that name a charge. */
const charged = { a: new Map(), b: new Map(), c: new Map() };

/**
 * A charge and a give-back through either build's `Store`: `charge(record, now)` and `giveBack(record,
 * now)` where the build has them (a charge is a record, issue 38), else the positional `consume` and
 * `undo` (older builds, and `reserve` older still); the same calls with the same values either way.
 */
async function charge(store, key, algorithm, cost, now, maxDelayMs) {
  if (typeof store.charge === 'function')
    return (await store.charge({ key, algorithm, cost, ...(maxDelayMs === undefined ? {} : { maxDelayMs }) }, now))
      .decision;
  if (maxDelayMs === undefined) return store.consume(key, algorithm, cost, now);
  return typeof store.reserve === 'function'
    ? store.reserve(key, algorithm, cost, maxDelayMs, now)
    : store.consume(key, algorithm, cost, now, maxDelayMs);
}
async function giveBack(store, key, algorithm, cost, now, chargedAt, delayMs) {
  if (typeof store.giveBack === 'function') {
    return store.giveBack(
      {
        key,
        algorithm,
        cost,
        ...(chargedAt === undefined ? {} : { chargedAt }),
        ...(delayMs === undefined ? {} : { delayMs }),
      },
      now,
    );
  }
  if (delayMs !== undefined) return store.undo(key, algorithm, cost, now, chargedAt, delayMs);
  return chargedAt === undefined
    ? store.undo(key, algorithm, cost, now)
    : store.undo(key, algorithm, cost, now, chargedAt);
}

async function apply(store, which, run, o) {
  const algorithm = algorithms[which][o.config];
  const key = `p${o.config % 3}:${o.key}`;
  const last = charged[run].get(`${o.config} ${key}`);
  let decision;
  switch (o.op) {
    case 'consume':
      decision = await charge(store, key, algorithm, o.cost, o.now);
      break;
    case 'reserve':
      decision = await charge(store, key, algorithm, o.cost, o.now, o.fraction * algorithm.maxReserveMs);
      break;
    case 'peek':
      decision = await store.peek(key, algorithm, 0, o.now);
      break;
    case 'undo':
      await giveBack(store, key, algorithm, o.cost, o.now);
      return 'undo';
    case 'undo-at':
      if (last === undefined || !last.allowed) return 'no charge';
      if (last.delayMs > 0) await giveBack(store, key, algorithm, o.cost, o.now, last.at, last.delayMs);
      else await giveBack(store, key, algorithm, o.cost, o.now, last.at);
      return 'undo at';
    case 'reset':
      await store.reset(key, algorithm);
      return 'reset';
    case 'acquire':
      decision = await store.acquire(key, algorithm, o.lease, o.now);
      break;
    case 'release':
      await store.release(key, algorithm, o.lease);
      return 'release';
  }
  if (o.op === 'consume' || o.op === 'reserve') charged[run].set(`${o.config} ${key}`, decision);
  const { allowed, limit, remaining, resetMs, retryAfterMs, delayMs, at } = decision;
  return JSON.stringify({ allowed, limit, remaining, resetMs, retryAfterMs, delayMs, at });
}

/** Runs every operation on `run`'s namespace, in groups issued together (batching), `storeOf(i)` the store of operation i. */
async function runAll(run, storeOf, whichOf) {
  const answers = [];
  for (let i = 0; i < operations.length;) {
    const group = [i];
    while (group.length < 8 && i + group.length < operations.length && operations[i + group.length].group === 0)
      group.push(i + group.length);
    const replies = await Promise.all(group.map((j) => apply(storeOf(j), whichOf(j), run, operations[j])));
    answers.push(...replies);
    i += group.length;
  }
  return answers;
}

const differences = [];
const a = await runAll(
  'a',
  () => stores.a,
  () => 'a',
);
const b = await runAll(
  'b',
  () => stores.b,
  () => 'b',
);
const c = await runAll(
  'c',
  (i) => (i % 2 === 0 ? stores.ca : stores.cb),
  (i) => (i % 2 === 0 ? 'a' : 'b'),
);
for (let i = 0; i < operations.length; i++) {
  if (a[i] !== b[i] || a[i] !== c[i])
    differences.push(`operation ${i} (${JSON.stringify(operations[i])}): a ${a[i]}, b ${b[i]}, alternating ${c[i]}`);
}

/** Every key of a namespace, by its name without the namespace: its type, value (a compact state's `kept` masked) and TTL. */
async function snapshot(prefix) {
  const found = new Map();
  let cursor = '0';
  do {
    const [next, batch] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    for (const key of batch) found.set(key.slice(prefix.length), key);
  } while (cursor !== '0');
  const out = new Map();
  for (const [name, key] of found) {
    const type = await client.type(key);
    const ttl = await client.pttl(key);
    let value;
    let kept = [];
    if (type === 'hash') {
      const fields = await client.hgetallBuffer(key);
      value = Object.keys(fields)
        .sort()
        .map((field) => {
          const v = Buffer.from(fields[field]);
          // A compact state (and a block of the compact layout) opens with `kept`, on Redis's clock.
          if (v.length >= 8 && v.length % 8 === 0) {
            kept.push(v.readDoubleLE(0));
            v.fill(0, 0, 8);
          }
          return `${field}=${v.toString('hex')}`;
        });
    } else if (type === 'list') value = (await client.lrangeBuffer(key, 0, -1)).map((v) => v.toString('hex'));
    else if (type === 'zset') value = await client.zrange(key, 0, -1, 'WITHSCORES');
    else value = (await client.getBuffer(key))?.toString('hex');
    out.set(name, { type, value: JSON.stringify(value), ttl, kept });
  }
  return out;
}
const spaces = { a: await snapshot('a:'), b: await snapshot('b:'), c: await snapshot('c:') };
const names = new Set([...spaces.a.keys(), ...spaces.b.keys(), ...spaces.c.keys()]);
let compared = 0;
for (const name of names) {
  const [x, y, z] = [spaces.a.get(name), spaces.b.get(name), spaces.c.get(name)];
  if (x === undefined || y === undefined || z === undefined) {
    differences.push(`key ${name}: in ${[x && 'a', y && 'b', z && 'c'].filter(Boolean).join(', ')} only`);
    continue;
  }
  compared++;
  if (x.type !== y.type || x.value !== y.value || x.type !== z.type || x.value !== z.value)
    differences.push(
      `key ${name}: ${x.type} ${x.value.slice(0, 200)} / ${y.type} ${y.value.slice(0, 200)} / ${z.type} ${z.value.slice(0, 200)}`,
    );
  const close = (p, q) => (p < 0 || q < 0 ? p === q : Math.abs(p - q) <= 2000);
  if (!close(x.ttl, y.ttl) || !close(x.ttl, z.ttl)) differences.push(`key ${name}: TTL ${x.ttl} / ${y.ttl} / ${z.ttl}`);
  if (x.kept.some((k, i) => Math.abs(k - y.kept[i]) > 2000 || Math.abs(k - z.kept[i]) > 2000))
    differences.push(`key ${name}: kept times ${x.kept} / ${y.kept} / ${z.kept}`);
}
const decided = a.filter((r) => r.startsWith('{')).length;
console.log(
  `${operations.length} operations (${decided} decisions) on ${configs.length} configurations, ${compared} keys per namespace compared`,
);
client.disconnect();
await server.stop();
if (differences.length > 0) {
  console.log(`${differences.length} differences; the first:\n${differences.slice(0, 10).join('\n')}`);
  process.exit(1);
}
console.log('same decisions, same bytes (the kept times and TTLs within 2 s)');
