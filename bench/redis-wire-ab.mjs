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
import { abArguments, compareNamespaces, finish, makeAlgorithm, openTwoBuilds, runThreeWays } from './lib/redis-ab.mjs';

const { otherRoot, count: COUNT, random, pick } = abArguments('redis-wire-ab.mjs', 3000);
const run = await openTwoBuilds(otherRoot);
const { builds, client, stores } = run;

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
    list.push({ kind, limit, window, countDenied: limit % 2 === 0, blockMs });
  }
  return list;
}

const configs = configurations();
const algorithms = {
  a: configs.map((c) => makeAlgorithm(builds.a, c)),
  b: configs.map((c) => makeAlgorithm(builds.b, c)),
};
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

const { a, differences } = await runThreeWays(stores, runAll, (i) => JSON.stringify(operations[i]));
const stored = await compareNamespaces(client, { times: true });
const decided = a.filter((r) => r.startsWith('{')).length;
console.log(
  `${operations.length} operations (${decided} decisions) on ${configs.length} configurations, ${stored.compared} keys per namespace compared`,
);
await finish(
  run,
  [...differences, ...stored.differences],
  'same decisions, same bytes (the kept times and TTLs within 2 s)',
);
