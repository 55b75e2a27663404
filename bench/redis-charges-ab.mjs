// Two builds of @rl/store-redis against one Redis, for what bench/redis-wire-ab.mjs does not run:
// idempotent charges and a request's charges decided together. Like it, for a change that must leave
// the Redis data as it was (the wire may change; the keys and values may not).
//
//   node bench/redis-charges-ab.mjs <other built checkout> [operations=2000] [seed=1]
//
// One random sequence (idempotent consumes and reservations of a few ids and two fingerprints, plain
// consumes, give-backs with and without the charge's id, and groups of 2 or 3 charges, some
// idempotent, some dry-run, with holds of 0, 800 ms and none) is run three times on one Redis, with the
// limiter's explicit clock: by the other build alone (prefix `a:`), by this one alone (`b:`), and
// alternating between the two, operation by operation (`c:`). Each build is called through its own
// interface: `charge`, `giveBack` and `chargeAll` where it has them, else `consume`, `undo` and
// `group`. Operations are issued up to six at a time when they touch different states (kind and key),
// so batching runs and the order between them does not matter. Every answer (the decision, and what
// the charge took: charged, replayed, a conflict, rolled back, not asked) must be the same in the
// three runs; at the end every Redis key must hold the same value, byte for byte, but the `kept`
// double that opens a compact state or a container of remembered ids (a time on Redis's own clock).
// Exits 1 on a difference, printing the first few.
import { abArguments, compareNamespaces, finish, makeAlgorithm, openTwoBuilds, runThreeWays } from './lib/redis-ab.mjs';

const { otherRoot, count: COUNT, random, pick } = abArguments('redis-charges-ab.mjs', 2000);
const run = await openTwoBuilds(otherRoot);
const { builds, client, stores } = run;

/** The configurations: each a recipe applied to a build's factories, so both builds make the same algorithm. */
const recipes = Array.from({ length: 12 }, () => ({
  kind: pick(['fixedWindow', 'tokenBucket', 'slidingWindowLog', 'leakyShaper', 'slidingWindowCounter']),
  limit: 2 + Math.floor(random() * 4),
  window: pick([1000, 3000]),
  blockMs: random() < 0.25 ? 2000 : 0,
}));
const algorithms = {
  a: recipes.map((r) => makeAlgorithm(builds.a, r)),
  b: recipes.map((r) => makeAlgorithm(builds.b, r)),
};
/** Digested ids (16 characters) and fingerprints (8), as `idempotentCharge` makes them. */
const ids = ['AAAAAAAAAAAAAAAA', 'BBBBBBBBBBBBBBBB', 'CCCCCCCCCCCCCCCC'];
const fingerprints = ['fp000000', 'fp111111'];
const idempotent = () => ({
  id: pick(ids),
  fingerprint: pick(fingerprints),
  ttlMs: pick([1500, 60_000]),
  maxIds: 2,
  maxReplays: pick([1, 3]),
});
const keys = ['k1', 'k2', '{t}x'];

/** The operations: a kind, a time, and one charge (or a group's charges). */
const operations = [];
let now = 1_800_000_000_000;
for (let i = 0; i < COUNT; i++) {
  now += Math.floor(random() * 300);
  const one = () => {
    const config = Math.floor(random() * recipes.length);
    const reserve = recipes[config].kind === 'leakyShaper' || random() < 0.2;
    return {
      config,
      key: pick(keys),
      cost: pick([1, 1, 2]),
      idempotency: random() < 0.6 ? idempotent() : undefined,
      maxDelay: reserve ? pick([0, 0.5, 1]) : undefined,
      enforced: random() < 0.8,
    };
  };
  const kind = pick(['idempotent', 'idempotent', 'reserve', 'consume', 'giveBack', 'giveBackId', 'group', 'group']);
  const charge = { ...one(), idempotency: idempotent() };
  operations.push({
    kind,
    now,
    together: random() < 0.5,
    charge,
    members: Array.from({ length: 2 + Math.floor(random() * 2) }, one),
    holdMs: pick([Infinity, 0, 800]),
  });
}
/** The states an operation touches (kind and key: configurations of one kind share a key's state). */
const statesOf = (o) => (o.kind === 'group' ? o.members : [o.charge]).map((m) => `${recipes[m.config].kind} ${m.key}`);

/** The last admitted charge of each configuration and key, for the give-backs. */
const charged = { a: new Map(), b: new Map(), c: new Map() };

/** What an answer says: the decision, and what the charge took (`took`, a conflict). */
const view = ({ decision: d, took, conflict }) =>
  JSON.stringify([
    d.allowed,
    d.remaining,
    d.resetMs,
    d.retryAfterMs,
    d.delayMs,
    d.at,
    d.reason,
    took,
    conflict === true,
  ]);
/** An answer of either interface: a `Charged`, or a decision and its marks. */
function answerOf(b, store, answer) {
  if (typeof store.charge === 'function') return answer;
  const k = b.kit;
  const took = k.wasNotAsked(answer)
    ? 'not-asked'
    : k.wasReplayed(answer)
      ? 'replayed'
      : k.tookNothing(answer)
        ? 'rolled-back'
        : 'charged';
  return { decision: answer, took, conflict: k.wasConflict(answer) };
}

async function apply(store, which, run, o) {
  const b = builds[which];
  const algorithm = (m) => algorithms[which][m.config];
  const record = (m) => ({
    key: `p:${m.key}`,
    algorithm: algorithm(m),
    cost: m.cost,
    ...(m.maxDelay === undefined ? {} : { maxDelayMs: m.maxDelay * algorithm(m).maxReserveMs }),
    ...(m.idempotency === undefined ? {} : { idempotency: m.idempotency }),
  });
  const single = async (m) => {
    const r = record(m);
    if (typeof store.charge === 'function') return store.charge(r, o.now);
    return answerOf(b, store, await store.consume(r.key, r.algorithm, r.cost, o.now, r.maxDelayMs, r.idempotency));
  };
  const remember = (m, answer) => {
    if (answer.decision.allowed && answer.took === 'charged') charged[run].set(`${m.config} ${m.key}`, { m, answer });
  };
  switch (o.kind) {
    case 'idempotent':
    case 'reserve':
    case 'consume': {
      const m = {
        ...o.charge,
        idempotency: o.kind === 'consume' ? undefined : o.charge.idempotency,
        maxDelay: o.kind === 'reserve' ? 1 : o.charge.maxDelay,
      };
      const answer = await single(m);
      remember(m, answer);
      return view(answer);
    }
    case 'giveBack':
    case 'giveBackId': {
      const last = charged[run].get(`${o.charge.config} ${o.charge.key}`);
      if (last === undefined) return 'nothing to give back';
      charged[run].delete(`${o.charge.config} ${o.charge.key}`);
      const { m, answer } = last;
      const id =
        o.kind === 'giveBackId' && m.idempotency !== undefined && answer.conflict !== true
          ? m.idempotency.id
          : undefined;
      const { key, algorithm: a, cost } = record(m);
      const delayMs = answer.decision.delayMs > 0 ? answer.decision.delayMs : undefined;
      if (typeof store.giveBack === 'function') {
        await store.giveBack(
          {
            key,
            algorithm: a,
            cost,
            chargedAt: answer.decision.at,
            ...(delayMs === undefined ? {} : { delayMs }),
            ...(id === undefined ? {} : { idempotencyId: id }),
          },
          o.now,
        );
      } else await store.undo(key, a, cost, o.now, answer.decision.at, delayMs, id);
      return 'given back';
    }
    case 'group': {
      let answers;
      if (typeof store.chargeAll === 'function') {
        answers = await Promise.all(
          store.chargeAll(
            o.members.map((m) => ({ charge: { ...record(m), enforced: m.enforced }, now: o.now })),
            { holdMs: o.holdMs },
          ),
        );
      } else {
        const group = store.group(o.holdMs);
        const pending = o.members.map((m) => {
          group.enforced = m.enforced;
          const r = record(m);
          return store.consume(r.key, r.algorithm, r.cost, o.now, r.maxDelayMs, r.idempotency);
        });
        group.close();
        answers = (await Promise.all(pending)).map((d) => answerOf(b, store, d));
      }
      answers.forEach((answer, i) => remember(o.members[i], answer));
      return answers.map(view).join(' ');
    }
  }
}

/** Runs every operation on `run`'s namespace, up to six at a time on states apart, `storeOf(i)` the store of operation i. */
async function runAll(run, storeOf, whichOf) {
  const answers = [];
  for (let i = 0; i < operations.length;) {
    const turn = [i];
    const states = new Set(statesOf(operations[i]));
    while (turn.length < 6 && i + turn.length < operations.length) {
      const next = operations[i + turn.length];
      if (!next.together || statesOf(next).some((s) => states.has(s))) break;
      for (const s of statesOf(next)) states.add(s);
      turn.push(i + turn.length);
    }
    answers.push(...(await Promise.all(turn.map((j) => apply(storeOf(j), whichOf(j), run, operations[j])))));
    i += turn.length;
  }
  return answers;
}

const { b, differences } = await runThreeWays(stores, runAll, (i) => operations[i].kind);
const stored = await compareNamespaces(client, { times: false });
const tally = {};
for (const line of b)
  for (const m of line.matchAll(/"(charged|rolled-back|not-asked|replayed)",(true|false)/g))
    tally[m[1] + (m[2] === 'true' ? ' (conflict)' : '')] =
      (tally[m[1] + (m[2] === 'true' ? ' (conflict)' : '')] ?? 0) + 1;
console.log(
  `${operations.length} operations; answers ${JSON.stringify(tally)}; ${stored.compared} keys per namespace compared`,
);
await finish(run, [...differences, ...stored.differences], 'same answers, same bytes');
