import { describe, expect, it } from 'vitest';
import { checkOptionNames, parseHttpOptions } from './http/options.js';
import { fixedWindow, tokenBucket } from './index.js';
import { createLimiter } from './limiter/index.js';
import { StepStore } from './testing/step-store.js';
import { rejection } from './testing/capture.js';

// Objects shaped as the other libraries' are (the methods rl tells them apart by); the real clients
// are tried in @rl/store-redis's tests (option-mistakes.test.ts).
const ioredisLike = { status: 'wait', defineCommand() {}, evalsha() {}, get() {} };
const nodeRedisLike = { isOpen: false, connect() {}, sendCommand() {}, get() {} };
const rateLimitRedisStore = {
  prefix: 'rl:',
  sendCommand() {},
  init() {},
  increment() {},
  decrement() {},
  resetKey() {},
};
const rateLimiterFlexible = { points: 10, consume() {}, penalty() {}, reward() {}, block() {} };
const bucket = tokenBucket({ capacity: 20, refillRate: 10 });
const parse = (options: unknown) => parseHttpOptions(options as never, 'rateLimit', []);

describe("a Redis client or another library's object given as store: the error says what it is and the fix", () => {
  it.each([
    [
      'an ioredis client',
      ioredisLike,
      /^Invalid option rateLimit\.store: an ioredis \(or iovalkey\) client\. Expected a store: pass store: new RedisStore\(\{ client \}\) from @rl\/store-redis/,
    ],
    [
      'a node-redis client',
      nodeRedisLike,
      /^Invalid option rateLimit\.store: a node-redis client\. Expected a store: pass store: new RedisStore\(\{ client \}\) from @rl\/store-redis/,
    ],
    [
      "rate-limit-redis's store",
      rateLimitRedisStore,
      /^Invalid option rateLimit\.store: an express-rate-limit store \(rate-limit-redis's RedisStore, or another\)\. Expected an rl store, which takes the Redis client rather than sendCommand: store: new RedisStore\(\{ client \}\)/,
    ],
    [
      "rate-limit-redis's sendCommand",
      (...args: string[]) => args,
      /^Invalid option rateLimit\.store: a function \(rate-limit-redis takes sendCommand; rl does not\)\. Expected a store object: store: new RedisStore\(\{ client \}\)/,
    ],
    [
      'a rate-limiter-flexible limiter',
      rateLimiterFlexible,
      /^Invalid option rateLimit\.store: a rate-limiter-flexible limiter\. Expected an rl store/,
    ],
  ])('%s', (_, store, message) => {
    const error = rejection(() => parse({ algorithm: bucket, store }));
    expect(error).toMatchObject({ code: 'RL_INVALID_OPTION', field: 'rateLimit.store', value: store });
    expect(error.message).toMatch(message);
  });

  it('the same in a limit of limits, and in createLimiter, under the name the user called', () => {
    expect(rejection(() => parse({ limits: [{ algorithm: bucket, store: ioredisLike }] })).message).toMatch(
      /^Invalid option rateLimit\.limits\[0\]\.store: an ioredis \(or iovalkey\) client\. Expected a store: pass store: new RedisStore/,
    );
    expect(rejection(() => createLimiter({ algorithm: bucket, store: nodeRedisLike as never })).message).toMatch(
      /^Invalid option createLimiter\.store: a node-redis client\. Expected a store: pass store: new RedisStore/,
    );
  });

  it('a limiter given as store names the store it was created with', () => {
    const limiter = createLimiter({ algorithm: bucket, store: new StepStore() });
    expect(rejection(() => createLimiter({ algorithm: bucket, store: limiter as never })).message).toMatch(
      /^Invalid option createLimiter\.store: a Limiter \(from createLimiter\)\. Expected the store that limiter was created with/,
    );
  });

  it('anything else is "a store such as new MemoryStore()", as before', () => {
    expect(rejection(() => parse({ algorithm: bucket, store: {} })).message).toMatch(
      /^Invalid option rateLimit\.store: an object\. Expected a store such as new MemoryStore\(\)\./,
    );
  });
});

describe('an algorithm, a factory or a limiter given where the options go: "wrap it", not the fields inside it', () => {
  it('rateLimit(tokenBucket(…)): one line naming rateLimit and { algorithm }', () => {
    const error = rejection(() => checkOptionNames(bucket, 'rateLimit', []));
    expect(error).toMatchObject({ field: 'rateLimit', fields: ['rateLimit'] });
    expect(error.message).toMatch(
      /^Invalid option rateLimit: a token-bucket algorithm\. Expected an options object: wrap the algorithm, rateLimit\(\{ algorithm \}\), for example rateLimit\(\{ algorithm: tokenBucket/,
    );
    expect(error.message).not.toContain('stateTag');
  });

  it('createLimiter(fixedWindow(…)) names createLimiter', () => {
    const error = rejection(() => createLimiter(fixedWindow({ limit: 5, window: '1m' }) as never));
    expect(error.message).toMatch(
      /^Invalid option createLimiter: a fixed-window algorithm\. Expected an options object: wrap the algorithm, createLimiter\(\{ algorithm \}\)/,
    );
  });

  it('a factory uncalled, as the options or as algorithm', () => {
    expect(rejection(() => checkOptionNames(tokenBucket, 'rateLimit', [])).message).toMatch(
      /^Invalid option rateLimit: the tokenBucket factory\. Expected an options object with the algorithm called: rateLimit\(\{ algorithm: tokenBucket\(\{ … \}\) \}\)/,
    );
    expect(rejection(() => parse({ algorithm: fixedWindow })).message).toMatch(
      /^Invalid option rateLimit\.algorithm: the fixedWindow factory, uncalled\. Expected an algorithm: call the factory, fixedWindow\(\{ … \}\)/,
    );
    expect(rejection(() => parse({ limits: [{ algorithm: fixedWindow }] })).message).toMatch(
      /^Invalid option rateLimit\.limits\[0\]\.algorithm: the fixedWindow factory, uncalled\./,
    );
    expect(rejection(() => createLimiter({ algorithm: tokenBucket as never, store: new StepStore() })).message).toMatch(
      /^Invalid option createLimiter\.algorithm: the tokenBucket factory, uncalled\./,
    );
  });

  it('a limiter given to rateLimit: the options it was created with', () => {
    const limiter = createLimiter({ algorithm: bucket, store: new StepStore() });
    expect(rejection(() => checkOptionNames(limiter, 'rateLimit', [])).message).toMatch(
      /^Invalid option rateLimit: a Limiter \(from createLimiter\)\. Expected the options of a limit, not a limiter/,
    );
  });

  it('a Redis client given as the options', () => {
    expect(rejection(() => checkOptionNames(ioredisLike, 'rateLimit', [])).message).toMatch(
      /^Invalid option rateLimit: an ioredis \(or iovalkey\) client\. Expected an options object, the client in a store: rateLimit\(\{ algorithm, store: new RedisStore\(\{ client \}\) \}\)/,
    );
  });

  it('a function of the request as algorithm is still a per-request choice', () => {
    expect(() => parse({ algorithm: () => bucket })).not.toThrow();
  });
});

describe("a limit's own options are named as its own (rateLimit.limits[i].…)", () => {
  it('onStoreError and maxDebt', () => {
    expect(
      rejection(() => parse({ limits: [{ algorithm: bucket }, { name: 'b', algorithm: bucket, onStoreError: 'x' }] }))
        .field,
    ).toBe('rateLimit.limits[1].onStoreError');
    expect(rejection(() => parse({ limits: [{ algorithm: bucket, maxDebt: -1 }] })).field).toBe(
      'rateLimit.limits[0].maxDebt',
    );
  });
});

describe('a cost above maxCost names the maxCost the user set, in the function called', () => {
  const minute = fixedWindow({ limit: 10, window: '1m' });

  it('createLimiter: createLimiter.maxCost', () => {
    const limiter = createLimiter({ algorithm: minute, store: new StepStore(), maxCost: 2 });
    expect(() => limiter.consumeSync('k', 3)).toThrow(
      /^Cost 3 is larger than this limiter's maxCost 2\. Raise createLimiter\.maxCost \(at most the fixed-window capacity 10\) or lower the cost\. See https:\/\/\S+#rl_cost_exceeds_capacity$/,
    );
  });

  it("rateLimit: rateLimit.maxCost, or the limit's own rateLimit.limits[i].maxCost", () => {
    expect(parse({ algorithm: minute, cost: () => 3, maxCost: 2 }).limits[0]!.maxCostField).toBe('rateLimit.maxCost');
    const several = parse({
      limits: [{ algorithm: minute }, { name: 'b', algorithm: minute, cost: () => 3, maxCost: 2 }],
    });
    expect(several.limits.map((l) => l.maxCostField)).toEqual(['rateLimit.maxCost', 'rateLimit.limits[1].maxCost']);
  });
});

describe('a store class given uninstantiated (store: MemoryStore): "pass new MemoryStore()"', () => {
  // Shaped as the real classes are (their prototype's methods); @rl/store-memory's and @rl/store-redis's
  // own classes are tried in their packages' option-mistakes tests.
  class MemoryStore {
    readonly capabilities = { local: true, algorithms: [] };
    charge(): void {}
    peek(): void {}
  }
  class RedisStore {
    charge(): void {}
  }
  class Redis {
    defineCommand(): void {}
    evalsha(): void {}
  }
  /** A compiled class (ES5 output): known by its prototype's methods alone. */
  function OldStore(this: object): void {}
  (OldStore.prototype as Record<string, unknown>).charge = function charge(): void {};
  class SomeStore {}

  it.each([
    [
      'MemoryStore',
      MemoryStore,
      /^Invalid option rateLimit\.store: the MemoryStore class, uninstantiated\. Expected an instance: pass new MemoryStore\(\) /,
    ],
    [
      'RedisStore',
      RedisStore,
      /^Invalid option rateLimit\.store: the RedisStore class, uninstantiated\. Expected an instance: pass store: new RedisStore\(\{ client \}\)/,
    ],
    [
      "ioredis's Redis",
      Redis,
      /^Invalid option rateLimit\.store: the Redis class, uninstantiated\. Expected a store, with a client in it: store: new RedisStore\(\{ client: new Redis\(…\) \}\)/,
    ],
    [
      'a compiled store class',
      OldStore,
      /^Invalid option rateLimit\.store: the OldStore class, uninstantiated\. Expected an instance: pass new OldStore\(…\)/,
    ],
    [
      'any class',
      SomeStore,
      /^Invalid option rateLimit\.store: the SomeStore class, uninstantiated\. Expected an instance: pass new SomeStore\(…\)/,
    ],
  ])('%s', (_, store, message) => {
    const error = rejection(() => parse({ algorithm: bucket, store }));
    expect(error).toMatchObject({ code: 'RL_INVALID_OPTION', field: 'rateLimit.store', value: store });
    expect(error.message).toMatch(message);
  });

  it('in createLimiter and in a limit of limits too; a plain function is still "rate-limit-redis takes sendCommand"', () => {
    expect(rejection(() => createLimiter({ algorithm: bucket, store: MemoryStore as never })).message).toMatch(
      /^Invalid option createLimiter\.store: the MemoryStore class, uninstantiated\. Expected an instance: pass new MemoryStore\(\)/,
    );
    expect(rejection(() => parse({ limits: [{ algorithm: bucket, store: MemoryStore }] })).message).toMatch(
      /^Invalid option rateLimit\.limits\[0\]\.store: the MemoryStore class/,
    );
    expect(rejection(() => parse({ algorithm: bucket, store: function sendCommand() {} })).message).toMatch(
      /a function \(rate-limit-redis takes sendCommand/,
    );
  });
});

describe("@nestjs/throttler's forRoot([...]) throttlers given as the options: the rl options, with their values", () => {
  it('one throttler: { algorithm: fixedWindow({ limit, window: ttl }) }', () => {
    const error = rejection(() => checkOptionNames([{ ttl: 60000, limit: 10 }], 'RateLimitModule.forRoot', []));
    expect(error).toMatchObject({ field: 'RateLimitModule.forRoot', fields: ['RateLimitModule.forRoot'] });
    expect(error.message).toMatch(
      /^Invalid option RateLimitModule\.forRoot: an array of @nestjs\/throttler throttlers \(\[\{ ttl, limit \}\]\)\. Expected an options object: RateLimitModule\.forRoot\(\{ algorithm: fixedWindow\(\{ limit: 10, window: 60000 \}\) \}\)\./,
    );
  });

  it('named throttlers: limits, each with its name; a blockDuration goes beside them', () => {
    const throttlers = [
      { name: 'short', ttl: 1000, limit: 3 },
      { name: 'long', ttl: 60000, limit: 100, blockDuration: 300000 },
    ];
    expect(rejection(() => checkOptionNames(throttlers, 'RateLimitModule.forRoot', [])).message).toContain(
      "Expected an options object: RateLimitModule.forRoot({ limits: [{ name: 'short', algorithm: fixedWindow({ limit: 3, window: 1000 }) }, { name: 'long', algorithm: fixedWindow({ limit: 100, window: 60000 }) }], blockDuration: 300000 })",
    );
  });

  it('any other array is "an options object", as before', () => {
    expect(rejection(() => checkOptionNames([{ algorithm: bucket }], 'rateLimit', [])).message).toMatch(
      /^Invalid option rateLimit: an array\. Expected an options object/,
    );
  });
});
