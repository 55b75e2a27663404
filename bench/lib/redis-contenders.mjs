// Redis contenders for sections 3 and 5. Each factory takes an ioredis client and returns
// { call(key) -> Promise, note }. Every limit is 100 per minute per key: keys then live long enough
// for the bytes-per-key count, and the benches (100k keys in rotation) stay on the allow path.
export const LIMIT = 100;
export const WINDOW_MS = 86_400_000; // one day: every key is still alive when the memory is counted
const RL_REDIS_LIMITS = {
  'fixed-window': (c) => c.fixedWindow({ limit: LIMIT, window: WINDOW_MS }),
  'sliding-window-log': (c) => c.slidingWindowLog({ limit: LIMIT, window: WINDOW_MS }),
  'sliding-window-counter': (c) => c.slidingWindowCounter({ limit: LIMIT, window: WINDOW_MS }),
  'token-bucket': (c) => c.tokenBucket({ capacity: LIMIT, refillRate: LIMIT, interval: WINDOW_MS }),
  'leaky-bucket': (c) => c.leakyBucket({ capacity: LIMIT, leakRate: LIMIT, interval: WINDOW_MS }),
};

export const RL_REDIS_ALGORITHMS = [
  'fixed-window',
  'sliding-window-log',
  'sliding-window-counter',
  'token-bucket',
  'leaky-bucket',
];

export async function rlRedisStoreClass() {
  try {
    const mod = await import('@rl/store-redis');
    return typeof mod.RedisStore === 'function' ? mod.RedisStore : undefined;
  } catch {
    return undefined;
  }
}

export const REDIS_CONTENDERS = {
  'raw EVALSHA (return 1)': async (client) => {
    client.defineCommand('benchTrivial', { numberOfKeys: 1, lua: 'return 1' });
    return {
      call: (key) => client.benchTrivial(key),
      note: "client.defineCommand('t', { numberOfKeys: 1, lua: 'return 1' }); await client.t(key)",
    };
  },
};
function rlContender(a, options = { timeout: false }, note = 'timeout: false', storeOptions = {}) {
  return async (client) => {
    const RedisStore = await rlRedisStoreClass();
    if (!RedisStore) throw new Error('SKIP @rl/store-redis exports no RedisStore yet');
    const core = await import('@rl/core');
    const limiter = core.createLimiter({
      algorithm: RL_REDIS_LIMITS[a](core),
      store: new RedisStore({ client, ...storeOptions }),
      ...options,
    });
    const storeNote =
      Object.keys(storeOptions).length > 0
        ? `, ${Object.entries(storeOptions)
            .map(([k, v]) => `${k}: ${JSON.stringify(v)}`)
            .join(', ')}`
        : '';
    return {
      call: (key) => limiter.consume(key),
      note: `await createLimiter({ algorithm, store: new RedisStore({ client${storeNote} }), ${note} }).consume(key)`,
      limiter,
    };
  };
}
// The store path itself: no client-side timeout (see the README: with the default 50 ms timeout a
// loaded 2-core machine trips the failure policy, and every decision for the next second is local).
for (const a of RL_REDIS_ALGORITHMS) REDIS_CONTENDERS[`rl ${a}`] = rlContender(a);
// The defaults as a user gets them (50 ms timeout: one timer per call).
REDIS_CONTENDERS['rl token-bucket (default timeout)'] = rlContender('token-bucket', {}, 'default options');
// The same store on node-redis 6 (createClient), batched: the other client family's cost. Its
// commands do not go through the ioredis client, so its round trips read 0.
REDIS_CONTENDERS['rl token-bucket (node-redis 6)'] = async (client) => {
  const RedisStore = await rlRedisStoreClass();
  if (!RedisStore) throw new Error('SKIP @rl/store-redis exports no RedisStore yet');
  const core = await import('@rl/core');
  const { createClient } = await import('redis');
  const nodeRedis = createClient({ socket: { host: '127.0.0.1', port: client.options.port } });
  await nodeRedis.connect();
  const limiter = core.createLimiter({
    algorithm: RL_REDIS_LIMITS['token-bucket'](core),
    store: new RedisStore({ client: nodeRedis }),
    timeout: false,
  });
  return {
    call: (key) => limiter.consume(key),
    note: 'await createLimiter({ algorithm, store: new RedisStore({ client: await createClient().connect() }), timeout: false }).consume(key)',
    limiter,
  };
};
// Every decision a script call of its own (batching off): the store as it was before batching.
REDIS_CONTENDERS['rl token-bucket (batch: false)'] = rlContender('token-bucket', { timeout: false }, 'timeout: false', {
  batch: false,
});
// A request with three limits (fixed window, token bucket, sliding window counter; each 100 per day
// per key), through combineLimiters: one group script call per request (issue 26), and the same three
// with the store's group hidden, so the engine charges them one after another (three calls).
function rlThreeLimits(together, defaults = false) {
  return async (client) => {
    const RedisStore = await rlRedisStoreClass();
    if (!RedisStore) throw new Error('SKIP @rl/store-redis exports no RedisStore yet');
    const core = await import('@rl/core');
    const store = new RedisStore({ client });
    // `chargeAll` (a build before it: `group`) decides a request's limits together.
    const grouping =
      typeof store.chargeAll === 'function' ? 'chargeAll' : typeof store.group === 'function' ? 'group' : undefined;
    if (grouping === undefined && together) throw new Error('SKIP this RedisStore decides no groups');
    // Without it, the engine sees a store that decides each limit alone.
    const used =
      together || grouping === undefined ? store : Object.create(store, { [grouping]: { value: undefined } });
    const limiters = ['fixed-window', 'token-bucket', 'sliding-window-counter'].map((a, i) =>
      core.createLimiter({
        algorithm: RL_REDIS_LIMITS[a](core),
        store: used,
        prefix: `l${i}`,
        ...(defaults ? {} : { timeout: false }),
      }),
    );
    const group = core.combineLimiters(limiters);
    return {
      call: (key) => group.consume(key),
      note: `await combineLimiters([fixedWindow, tokenBucket, slidingWindowCounter limiters]).consume(key)${together ? '' : ", the store's grouped call hidden"}`,
    };
  };
}
REDIS_CONTENDERS['rl 3 limits, one script per request'] = rlThreeLimits(true);
REDIS_CONTENDERS['rl 3 limits, one call per limit'] = rlThreeLimits(false);
// The same with the options a user gets (the 50 ms timeout: a deadline per limit per request).
REDIS_CONTENDERS['rl 3 limits, one script per request (default timeout)'] = rlThreeLimits(true, true);
REDIS_CONTENDERS['rl 3 limits, one call per limit (default timeout)'] = rlThreeLimits(false, true);

// One hot key (a global limit: every request the same key, a fixed window of 1e9 per day, the allow
// path), with quota leases of 50 units and without: one script call per 50 decisions against one each.
function rlHotKey(lease) {
  return async (client) => {
    const RedisStore = await rlRedisStoreClass();
    if (!RedisStore) throw new Error('SKIP @rl/store-redis exports no RedisStore yet');
    const core = await import('@rl/core');
    const options = {
      algorithm: core.fixedWindow({ limit: 1e9, window: WINDOW_MS }),
      store: new RedisStore({ client }),
      timeout: false,
      ...(lease && { lease: { units: 50 } }),
    };
    const limiter = core.createLimiter(options);
    return {
      call: () => limiter.consume('global'),
      note: `await createLimiter({ algorithm, store, timeout: false${lease ? ', lease: { units: 50 }' : ''} }).consume('global')`,
      limiter,
    };
  };
}
REDIS_CONTENDERS['rl hot key, lease 50 units'] = rlHotKey(true);
REDIS_CONTENDERS['rl hot key, no lease'] = rlHotKey(false);

// What a script that keeps state in Redis costs Redis at the least: one HGET and one HSET of a small
// field of a bucket hash (as rl's compact layout keeps state), alone and batched as rl batches (the
// decisions of a turn, at most 16, in one call).
const MINIMAL_RMW =
  "local v = redis.call('HGET', KEYS[1], ARGV[1]) redis.call('HSET', KEYS[1], ARGV[1], 'xxxxxxxxxxxxxxxxxxxxxxxx') return 1";
const MINIMAL_RMW_BATCH =
  "for i = 1, #ARGV do local v = redis.call('HGET', KEYS[i], ARGV[i]) redis.call('HSET', KEYS[i], ARGV[i], 'xxxxxxxxxxxxxxxxxxxxxxxx') end return 1";
const bucketOfKey = (key) => {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return `rmw{#${((h >>> 0) % 16384).toString(16)}}`;
};
REDIS_CONTENDERS['minimal read-modify-write script'] = async (client) => {
  client.defineCommand('benchRmw', { numberOfKeys: 1, lua: MINIMAL_RMW });
  return {
    call: (key) => client.benchRmw(bucketOfKey(key), key),
    note: 'one HGET and one HSET of a 24-byte field of a bucket hash, one EVALSHA per decision',
  };
};
REDIS_CONTENDERS['minimal read-modify-write script, batched'] = async (client) => {
  const sha = await client.script('LOAD', MINIMAL_RMW_BATCH);
  let keys = [];
  let fields = [];
  let waiting = [];
  const flush = () => {
    const [k, f, w] = [keys, fields, waiting];
    [keys, fields, waiting] = [[], [], []];
    client.evalsha(sha, k.length, ...k, ...f).then(() => w.forEach((resolve) => resolve()));
  };
  return {
    call: (key) =>
      new Promise((resolve) => {
        if (keys.push(bucketOfKey(key)) === 1) setImmediate(() => keys.length > 0 && flush());
        fields.push(key);
        waiting.push(resolve);
        if (keys.length >= 16) flush();
      }),
    note: 'the same, the decisions of a turn (at most 16) in one EVALSHA',
  };
};
REDIS_CONTENDERS['rate-limiter-flexible Redis'] = async (client) => {
  const { RateLimiterRedis } = await import('rate-limiter-flexible');
  const rlf = new RateLimiterRedis({ storeClient: client, points: LIMIT, duration: WINDOW_MS / 1000 });
  return {
    call: (key) => rlf.consume(key),
    note: 'await new RateLimiterRedis({ storeClient, points, duration }).consume(key)',
  };
};
REDIS_CONTENDERS['rate-limit-redis'] = async (client) => {
  const { RedisStore } = await import('rate-limit-redis');
  const store = new RedisStore({ sendCommand: (command, ...args) => client.call(command, ...args) });
  store.init({ windowMs: WINDOW_MS });
  await store.loadIncrementScript?.();
  return {
    call: (key) => store.increment(key),
    note: 'await new RedisStore({ sendCommand }).increment(key) (express-rate-limit store)',
  };
};
REDIS_CONTENDERS['@fastify/rate-limit RedisStore'] = async (client) => {
  const { createRequire } = await import('node:module');
  const require = createRequire(import.meta.url);
  const FastifyRedisStore = require('@fastify/rate-limit/store/RedisStore.js');
  const store = new FastifyRedisStore(false, false, client, 'fastify-rate-limit-');
  const incr = (key) =>
    new Promise((resolve, reject) =>
      store.incr(key, (err, res) => (err ? reject(err) : resolve(res)), WINDOW_MS, LIMIT),
    );
  return {
    call: incr,
    note: 'store.incr(key, cb, timeWindow, max) of @fastify/rate-limit/store/RedisStore.js, promisified',
  };
};

/** Section 5: one key flooding a limit of 100 per day, with and without the deny cache. */
export const FLOOD_CONTENDERS = {
  'rl token-bucket (deny cache on: default for Redis)': rlContender(
    'token-bucket',
    { timeout: false },
    'timeout: false',
  ),
  'rl fixed-window (deny cache on: default for Redis)': rlContender(
    'fixed-window',
    { timeout: false },
    'timeout: false',
  ),
  'rl token-bucket, denyCache: false': rlContender(
    'token-bucket',
    { timeout: false, denyCache: false },
    'timeout: false, denyCache: false',
  ),
};
// The cost of checking bans (`bans: true`: the blocking variant of the script, one more HGET per decision).
REDIS_CONTENDERS['rl token-bucket (bans: true)'] = rlContender(
  'token-bucket',
  { timeout: false, bans: true },
  'timeout: false, bans: true',
);
