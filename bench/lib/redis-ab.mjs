// What the A/B scripts of two builds of @rl/store-redis on one Redis share (redis-wire-ab.mjs,
// redis-charges-ab.mjs): their command line and seeded random numbers, the two builds, the four
// stores (each build alone, and both on one namespace), the three runs of one sequence, and the
// comparison of what the runs left in Redis, key by key.
import { pathToFileURL } from 'node:url';
import path from 'node:path';
import { createRequire } from 'node:module';
import { ROOT_DIR, startRedis } from './common.mjs';

/**
 * `node bench/<script> <other built checkout> [operations=<defaultCount>] [seed=1]`: the other
 * checkout, the number of operations, and random numbers from the seed (the same sequence for
 * the same seed). Exits 2 with the usage line when no checkout is given.
 */
export function abArguments(script, defaultCount) {
  const [otherRoot, countArg = String(defaultCount), seedArg = '1'] = process.argv.slice(2);
  if (otherRoot === undefined) {
    console.error(`usage: node bench/${script} <other built checkout> [operations] [seed]`);
    process.exit(2);
  }
  let seed = Number(seedArg);
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const pick = (list) => list[Math.floor(random() * list.length)];
  return { otherRoot: path.resolve(otherRoot), count: Number(countArg), random, pick };
}

/** One build of a checkout: its core (the algorithm factories), its store kit (`@rl/core/store`) and its RedisStore. */
async function loadBuild(root) {
  const url = (rel) => pathToFileURL(path.join(root, rel)).href;
  const core = await import(url('packages/core/dist/index.js'));
  const kit = await import(url('packages/core/dist/store/index.js'));
  const redis = await import(url('packages/store-redis/dist/index.js'));
  return { core, kit, RedisStore: redis.RedisStore };
}

/**
 * The two builds (`a`: the other checkout, `b`: this one), a Redis of its own and one ioredis client
 * on it, and the four stores on that client: `a` and `b` alone (prefixes `a:` and `b:`), `ca` and `cb`
 * on one namespace (`c:`), for the run that alternates between the builds.
 */
export async function openTwoBuilds(otherRoot) {
  const builds = { a: await loadBuild(otherRoot), b: await loadBuild(ROOT_DIR) };
  const require = createRequire(path.join(ROOT_DIR, 'bench', 'package.json'));
  const { default: Redis } = await import(pathToFileURL(require.resolve('ioredis')).href);
  const server = await startRedis();
  const client = new Redis({ port: server.port, host: '127.0.0.1' });
  const stores = {
    a: new builds.a.RedisStore({ client, prefix: 'a:' }),
    b: new builds.b.RedisStore({ client, prefix: 'b:' }),
    ca: new builds.a.RedisStore({ client, prefix: 'c:' }),
    cb: new builds.b.RedisStore({ client, prefix: 'c:' }),
  };
  return { builds, server, client, stores };
}

/**
 * A recipe's algorithm, made with a build's factories (both builds make the same one from one recipe):
 * `kind` is a factory's name, or `leakyShaper` (a leaky bucket that shapes); `limit` units per
 * `window` ms (for `concurrency`, permits of a lease of `window` ms); `countDenied` for a sliding log
 * where given; a lockout of `blockMs` when above 0.
 */
export function makeAlgorithm(build, { kind, limit, window, countDenied, blockMs }) {
  const f = build.core;
  const bucket = { capacity: limit, interval: window };
  const algorithm = (() => {
    switch (kind) {
      case 'fixedWindow':
        return f.fixedWindow({ limit, window });
      case 'slidingWindowLog':
        return f.slidingWindowLog({ limit, window, ...(countDenied === undefined ? {} : { countDenied }) });
      case 'slidingWindowCounter':
        return f.slidingWindowCounter({ limit, window });
      case 'tokenBucket':
        return f.tokenBucket({ ...bucket, refillRate: limit });
      case 'leakyBucket':
        return f.leakyBucket({ ...bucket, leakRate: limit });
      case 'leakyShaper':
        return f.leakyBucket({ ...bucket, leakRate: limit, mode: 'shape' });
      case 'concurrency':
        return f.concurrency({ limit, lease: window });
    }
    throw new Error(`no such kind: ${kind}`);
  })();
  return blockMs > 0 ? build.kit.withBlock(algorithm, blockMs) : algorithm;
}

/**
 * Runs one sequence three times, `runAll(run, storeOf, whichOf)` each: by build `a` alone, by `b`
 * alone, and alternating operation by operation on one namespace (`c`). Their answers, and a
 * difference (`describe(i)` naming operation i) wherever the three do not say the same.
 */
export async function runThreeWays(stores, runAll, describe) {
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
  const differences = [];
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i] || a[i] !== c[i])
      differences.push(`operation ${i} (${describe(i)}): a ${a[i]}, b ${b[i]}, alternating ${c[i]}`);
  }
  return { a, b, c, differences };
}

/**
 * Every key of a namespace, by its name without the namespace: its type, its value (the `kept` double
 * that opens a compact state, a block of the compact layout or a field of remembered ids masked: a
 * time on Redis's own clock, which moved between the runs), the kept times, and its TTL.
 */
async function snapshot(client, prefix) {
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
    const kept = [];
    if (type === 'hash') {
      const fields = await client.hgetallBuffer(key);
      value = Object.keys(fields)
        .sort()
        .map((field) => {
          const v = Buffer.from(fields[field]);
          if (v.length >= 8 && (v.length % 8 === 0 || field.startsWith('#~'))) {
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

/**
 * Compares what the three runs left in Redis, key by key: the same keys, each of the same type and
 * value byte for byte; with `times`, also the TTLs and the kept times within 2 s. The number of keys
 * compared, and the differences.
 */
export async function compareNamespaces(client, { times }) {
  const spaces = { a: await snapshot(client, 'a:'), b: await snapshot(client, 'b:'), c: await snapshot(client, 'c:') };
  const differences = [];
  let compared = 0;
  for (const name of new Set([...spaces.a.keys(), ...spaces.b.keys(), ...spaces.c.keys()])) {
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
    if (!times) continue;
    const close = (p, q) => (p < 0 || q < 0 ? p === q : Math.abs(p - q) <= 2000);
    if (!close(x.ttl, y.ttl) || !close(x.ttl, z.ttl))
      differences.push(`key ${name}: TTL ${x.ttl} / ${y.ttl} / ${z.ttl}`);
    if (x.kept.some((k, i) => Math.abs(k - y.kept[i]) > 2000 || Math.abs(k - z.kept[i]) > 2000))
      differences.push(`key ${name}: kept times ${x.kept} / ${y.kept} / ${z.kept}`);
  }
  return { compared, differences };
}

/** Closes the client and the Redis; prints the first differences and exits 1 if there are any, else prints `same`. */
export async function finish({ client, server }, differences, same) {
  client.disconnect();
  await server.stop();
  if (differences.length > 0) {
    console.log(`${differences.length} differences; the first:\n${differences.slice(0, 10).join('\n')}`);
    process.exit(1);
  }
  console.log(same);
}
