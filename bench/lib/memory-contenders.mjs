// In-process contenders for sections 1 and 2. Each factory returns { call(key), sync, note }:
// `call` is what a user writes for one decision; `sync` says whether its result is a plain value.
import { createLimiter, fixedWindow, slidingWindowLog, slidingWindowCounter, tokenBucket, leakyBucket } from '@rl/core';
import { MemoryStore } from '@rl/store-memory';

/** Limits high enough that (nearly) everything is admitted: the allow path is measured. */
export const BIG = 1_000_000_000;

export const RL_ALGORITHMS = {
  'fixed-window': () => fixedWindow({ limit: BIG, window: '1m' }),
  // A log keeps one record per admitted request: a huge limit would grow it without bound, so
  // this one admits 1000 per second per key and denies the rest (mostly denials on one hot key).
  'sliding-window-log': () => slidingWindowLog({ limit: 1000, window: '1s' }),
  'sliding-window-counter': () => slidingWindowCounter({ limit: BIG, window: '1m' }),
  'token-bucket': () => tokenBucket({ capacity: BIG, refillRate: BIG }),
  'leaky-bucket': () => leakyBucket({ capacity: BIG, leakRate: BIG }),
};

function rlLimiter(algorithm) {
  // maxKeys above the 1M keys of section 2; no sweeper (nothing expires during a run anyway).
  const store = new MemoryStore({ maxKeys: 2_000_000, sweepInterval: false });
  return createLimiter({ algorithm: RL_ALGORITHMS[algorithm](), store });
}

/** The near-limit reference: a hand-written synchronous token bucket, a Map of { tokens, last }. */
export function handBucket(capacity = BIG, ratePerMs = BIG / 1000) {
  const buckets = new Map();
  return function take(key) {
    const now = Date.now();
    let b = buckets.get(key);
    if (b === undefined) {
      b = { tokens: capacity, last: now };
      buckets.set(key, b);
    } else if (now > b.last) {
      b.tokens = Math.min(capacity, b.tokens + (now - b.last) * ratePerMs);
      b.last = now;
    }
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return true;
    }
    return false;
  };
}

export const CONTENDERS = {};
for (const name of Object.keys(RL_ALGORITHMS)) {
  CONTENDERS[`rl ${name}`] = async () => {
    const limiter = rlLimiter(name);
    return { call: (key) => limiter.consume(key), sync: false, note: 'await limiter.consume(key)' };
  };
}
// The same limiter without the promise: the store's synchronous answer (what consume wraps).
// (A build before the Store took a charge record calls `consume`, the same step.)
CONTENDERS['rl token-bucket (sync store call)'] = async () => {
  const limiter = rlLimiter('token-bucket');
  const { store, algorithm } = limiter;
  if (typeof store.charge !== 'function') {
    return {
      call: (key) => store.consume(limiter.storageKey(key), algorithm, 1, undefined),
      sync: true,
      note: 'limiter.store.consume(storageKey, algorithm, 1, undefined), no await',
      extra: true,
    };
  }
  return {
    call: (key) =>
      store.charge(
        {
          key: limiter.storageKey(key),
          algorithm,
          cost: 1,
          maxDelayMs: undefined,
          idempotency: undefined,
          enforced: undefined,
        },
        undefined,
      ).decision,
    sync: true,
    note: 'limiter.store.charge({ key: storageKey, algorithm, cost: 1 }, undefined).decision, no await',
    extra: true,
  };
};
// The synchronous public entry for local stores, when the built core has it.
CONTENDERS['rl token-bucket (consumeSync)'] = async () => {
  const limiter = rlLimiter('token-bucket');
  if (typeof limiter.consumeSync !== 'function') return { skip: 'the built @rl/core has no limiter.consumeSync yet' };
  return {
    call: (key) => limiter.consumeSync(key),
    sync: true,
    note: 'limiter.consumeSync(key), no await',
    extra: true,
  };
};
// With an observer that counts by limit and outcome: the cost of the observer seam per decision.
CONTENDERS['rl token-bucket (observed)'] = async () => {
  const limiter = rlLimiter('token-bucket');
  if (typeof limiter.observe !== 'function') return { skip: 'the built @rl/core has no limiter.observe yet' };
  limiter.observe(countingObserver());
  return {
    call: (key) => limiter.consume(key),
    sync: false,
    note: 'await limiter.consume(key), observed by a counting observer',
    extra: true,
  };
};
/** Counts decisions per `limit/outcome` in a Map: about what a metrics exporter does per decision. */
export function countingObserver() {
  const counts = new Map();
  return {
    counts,
    decision(event) {
      const label = `${event.limit}/${event.outcome}`;
      counts.set(label, (counts.get(label) ?? 0) + 1);
    },
  };
}
CONTENDERS['hand bucket (sync)'] = async () => ({
  call: handBucket(),
  sync: true,
  note: 'take(key): Map of {tokens,last}, Date.now()',
});
CONTENDERS['hand bucket (await)'] = async () => {
  const take = handBucket();
  return { call: take, sync: false, note: 'await take(key): the same function, awaited', extra: true };
};
CONTENDERS['rate-limiter-flexible Memory'] = async () => {
  const { RateLimiterMemory } = await import('rate-limiter-flexible');
  const rlf = new RateLimiterMemory({ points: BIG, duration: 60 });
  return {
    call: (key) => rlf.consume(key),
    sync: false,
    note: 'await new RateLimiterMemory({points,duration}).consume(key)',
  };
};
CONTENDERS['express-rate-limit MemoryStore'] = async () => {
  const { MemoryStore: ErlStore } = await import('express-rate-limit');
  const store = new ErlStore();
  store.init({ windowMs: 60_000 });
  // Its timer keeps the process alive: unref it.
  store.interval?.unref?.();
  return {
    call: async (key) => (await store.increment(key)).totalHits <= BIG,
    sync: false,
    note: '(await store.increment(key)).totalHits <= limit',
    close: () => store.shutdown?.(),
  };
};
CONTENDERS['koa-ratelimit memory driver'] = undefined; // koa-ratelimit is measured through HTTP only (section 4)
delete CONTENDERS['koa-ratelimit memory driver'];
