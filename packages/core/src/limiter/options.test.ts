import { describe, expect, it } from 'vitest';
import { TestStore } from '../testing/test-store.js';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { InvalidOptionError } from '../errors.js';
import { parseLimiterOptions } from './options.js';

const store = new TestStore();
const algorithm = fixedWindow({ limit: 5, window: '1m' });

/** The error createLimiter's options parsing throws for `options` beside a valid algorithm and store. */
function rejection(options: Record<string, unknown>): InvalidOptionError {
  try {
    parseLimiterOptions({ algorithm, store, ...options } as never);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidOptionError);
    return error as InvalidOptionError;
  }
  throw new Error(`accepted ${JSON.stringify(options)}`);
}

describe("createLimiter: a peer's option names the rl equivalent", () => {
  it.each([
    ['points', 'fixedWindow({ limit: points, window })'],
    ['duration', 'window: duration * 1000'],
    ['keyPrefix', 'use prefix'],
    ['storeClient', 'store: new RedisStore({ client })'],
    ['insuranceLimiter', 'onStoreError: { fallback: { algorithm, store: new MemoryStore() } }'],
    ['execEvenly', 'limiter.reserve(key, cost, { maxDelay })'],
    ['inMemoryBlockOnConsumed', 'denyCache'],
    ['windowMs', 'fixedWindow({ limit, window })'],
  ])('%s: %s', (name, equivalent) => {
    const error = rejection({ [name]: 1 });
    expect(error.field).toBe(`createLimiter.${name}`);
    expect(error.message).toMatch(
      new RegExp(`^Invalid option createLimiter\\.${name}: 1\\. Expected no such option \\(`),
    );
    expect(error.message).toContain(equivalent);
  });

  it("rate-limiter-flexible's options all at once, in one error", () => {
    const error = rejection({ points: 10, duration: 1, keyPrefix: 'x', execEvenly: true });
    expect(error.fields).toEqual([
      'createLimiter.points',
      'createLimiter.duration',
      'createLimiter.keyPrefix',
      'createLimiter.execEvenly',
    ]);
    expect(error.message).toMatch(
      /^Invalid options createLimiter\.points, createLimiter\.duration, createLimiter\.keyPrefix, createLimiter\.execEvenly\./,
    );
    for (const text of ['points (', 'duration (', 'keyPrefix (', 'execEvenly (']) expect(error.message).toContain(text);
  });

  it("blockDuration is rl's own option (a duration in ms or a string, not seconds): no hint, it is accepted", () => {
    expect(parseLimiterOptions({ algorithm, store, blockDuration: '1h' }).blockMs).toBe(3_600_000);
  });
});

describe('createLimiter: idempotencyMaxReplays', () => {
  it.each([0, -1, 1.5, Number.POSITIVE_INFINITY, Number.NaN, 1_001, '3', null])(
    '%s is refused, naming the range and what to do for no replays',
    (value) => {
      const error = rejection({ idempotencyMaxReplays: value });
      expect(error).toMatchObject({ code: 'RL_INVALID_OPTION', field: 'createLimiter.idempotencyMaxReplays' });
      expect(error.message).toContain('an integer from 1 to 1000');
      expect(error.message).toContain('to replay none, leave idempotencyKey out');
    },
  );

  it('defaults to 5; 1 and 1,000 are taken', () => {
    expect(parseLimiterOptions({ algorithm, store }).idempotency).toEqual({
      ttlMs: 600_000,
      maxIds: 100,
      maxReplays: 5,
    });
    expect(parseLimiterOptions({ algorithm, store, idempotencyMaxReplays: 1 }).idempotency.maxReplays).toBe(1);
    expect(parseLimiterOptions({ algorithm, store, idempotencyMaxReplays: 1_000 }).idempotency.maxReplays).toBe(1_000);
  });
});
