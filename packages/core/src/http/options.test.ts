import { describe, expect, it } from 'vitest';
import { adaptiveConcurrency } from '../adaptive/adaptive-concurrency.js';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { InvalidOptionError } from '../errors.js';
import { PASSED_LIMITER_OPTIONS } from './option-types.js';
import { parseHttpOptions } from './options.js';

const algorithm = fixedWindow({ limit: 5, window: '1m' });

/** The field of the InvalidOptionError that parsing `options` throws. */
function rejectedField(options: Record<string, unknown>): string {
  try {
    parseHttpOptions(options as never, 'rateLimit', ['onLimit']);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidOptionError);
    return (error as InvalidOptionError).field;
  }
  throw new Error(`accepted ${JSON.stringify(options)}`);
}

describe('null is a bad value for every option, never "not given"', () => {
  const middlewareOptions = [
    'store',
    'prefix',
    'key',
    'cost',
    'skip',
    'headers',
    'wait',
    'ipv6Subnet',
    'timers',
    'dryRun',
    'skipFailedRequests',
    'skipSuccessfulRequests',
    // Passed through to createLimiter.
    ...PASSED_LIMITER_OPTIONS,
  ];
  it.each(middlewareOptions)('rateLimit.%s', (name) => {
    expect(rejectedField({ algorithm, [name]: null })).toBe(`rateLimit.${name}`);
  });

  it.each(['algorithm', 'limits'])('rateLimit.%s', (name) => {
    expect(rejectedField({ [name]: null })).toBe(`rateLimit.${name}`);
    // Beside the other one, a null is not "left out": exactly one of the two is given.
    expect(
      rejectedField({ ...(name === 'algorithm' ? { limits: [{ algorithm }] } : { algorithm }), [name]: null }),
    ).toBe('rateLimit.algorithm');
  });

  it.each(['name', 'key', 'cost', 'store', 'onStoreError', 'dryRun'])('rateLimit.limits[0].%s', (name) => {
    expect(rejectedField({ limits: [{ algorithm, [name]: null }] })).toBe(`rateLimit.limits[0].${name}`);
  });

  it('rateLimit.limits[0].algorithm, rateLimit.limits[0] and rateLimit', () => {
    expect(rejectedField({ limits: [{ algorithm: null }] })).toBe('rateLimit.limits[0].algorithm');
    expect(rejectedField({ limits: [null] })).toBe('rateLimit.limits[0]');
    expect(() => parseHttpOptions(null as never, 'rateLimit', [])).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'rateLimit' }),
    );
  });

  it('undefined is "not given"', () => {
    const config = parseHttpOptions(
      { algorithm, store: undefined, key: undefined, onStoreError: undefined, timeout: undefined },
      'rateLimit',
      [],
    );
    expect(config.store).toBeUndefined();
    expect(config.key).toBeUndefined();
    expect(config.limiterOptions).toEqual({});
    expect(
      parseHttpOptions({ limits: [{ algorithm, name: undefined, store: undefined }] }, 'rateLimit', []).limits[0]!.name,
    ).toBe('5-in-1m');
  });
});

describe('a limit chosen per request', () => {
  it('is named per-request in the namespace unless named, and shows the chosen policy name in the headers', () => {
    const config = parseHttpOptions({ algorithm: () => algorithm }, 'rateLimit', []);
    expect(config.limits[0]).toMatchObject({ name: 'per-request', headerName: undefined, algorithm: undefined });
    const named = parseHttpOptions({ limits: [{ name: 'plan', algorithm: () => algorithm }] }, 'rateLimit', []);
    expect(named.limits[0]).toMatchObject({ name: 'plan', headerName: 'plan' });
  });

  it('allows wait (the chosen algorithm may shape) and a maxCost up to the largest count', () => {
    expect(parseHttpOptions({ algorithm: () => algorithm, wait: { maxDelay: '1s' } }, 'rateLimit', []).maxDelayMs).toBe(
      1000,
    );
    expect(
      parseHttpOptions({ algorithm: () => algorithm, cost: () => 1, maxCost: 1e12 }, 'rateLimit', []).limits[0]!
        .maxCost,
    ).toBe(1e12);
  });
});

describe("a peer's option names: the error names the rl equivalent, and every unknown option is reported at once", () => {
  /** The error parsing `options` throws. */
  function rejection(options: Record<string, unknown>): InvalidOptionError {
    try {
      parseHttpOptions(options as never, 'rateLimit', ['onLimit']);
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidOptionError);
      return error as InvalidOptionError;
    }
    throw new Error(`accepted ${JSON.stringify(options)}`);
  }

  it.each([
    ['windowMs', 'algorithm: fixedWindow({ limit, window })'],
    ['max', 'algorithm: fixedWindow({ limit, window })'],
    ['limit', 'algorithm: fixedWindow({ limit, window })'],
    ['timeWindow', 'algorithm: fixedWindow({ limit, window })'],
    ['points', 'tokenBucket({ capacity, refillRate })'],
    ['duration', "rate-limiter-flexible's are seconds"],
    ['keyGenerator', "use key, a function of the framework's request"],
    ['id', 'key: (ctx) => string'],
    ['standardHeaders', "headers: 'draft-8'"],
    ['legacyHeaders', "headers: 'legacy'"],
    ['handler', 'onLimit'],
    ['message', 'onLimit'],
    ['allowList', 'skip: (request) => boolean'],
    ['whitelist', 'skip: (ctx) => boolean'],
    ['ban', 'blockDuration'],
    ['skipOnError', "onStoreError: 'allow'"],
    ['passOnStoreError', "onStoreError: 'allow'"],
    ['redis', 'store: new RedisStore({ client })'],
    ['db', 'store: new RedisStore({ client })'],
    ['nameSpace', 'prefix'],
    ['disableHeader', 'headers: false'],
  ])('rateLimit.%s: %s', (name, equivalent) => {
    const error = rejection({ algorithm, [name]: 1 });
    expect(error).toMatchObject({
      code: 'RL_INVALID_OPTION',
      field: `rateLimit.${name}`,
      fields: [`rateLimit.${name}`],
    });
    expect(error.message).toMatch(new RegExp(`^Invalid option rateLimit\\.${name}: 1\\. Expected no such option \\(`));
    expect(error.message).toContain(equivalent);
  });

  it("express-rate-limit's options pasted whole: one error naming each, with its equivalent", () => {
    const error = rejection({
      windowMs: 15 * 60 * 1000,
      limit: 100,
      standardHeaders: 'draft-8',
      legacyHeaders: false,
      keyGenerator: () => 'k',
      algorithm,
    });
    expect(error.fields).toEqual([
      'rateLimit.windowMs',
      'rateLimit.limit',
      'rateLimit.standardHeaders',
      'rateLimit.legacyHeaders',
      'rateLimit.keyGenerator',
    ]);
    expect(error.message).toMatch(
      /^Invalid options rateLimit\.windowMs, rateLimit\.limit, rateLimit\.standardHeaders, rateLimit\.legacyHeaders, rateLimit\.keyGenerator\./,
    );
    expect(error.message).toContain(
      "keyGenerator (a peer's key function: use key, a function of the framework's request (Express and Nest (req), Fastify (request), Koa (ctx), Hono (c)) returning a string)",
    );
    expect(error.message).toContain('rateLimit takes algorithm, limits');
  });

  it('unknown options are reported before a missing algorithm: the peer names say what the algorithm should be', () => {
    expect(rejection({ windowMs: 60_000, max: 5 }).fields).toEqual(['rateLimit.windowMs', 'rateLimit.max']);
  });

  it('an unknown name without a peer equivalent is still listed', () => {
    const error = rejection({ algorithm, colour: 'red', max: 3 });
    expect(error.fields).toEqual(['rateLimit.colour', 'rateLimit.max']);
    expect(error.message).toContain('no such options: colour; max (');
  });

  it("each entry of limits too, and the adapter's own options are known", () => {
    const error = rejection({ limits: [{ algorithm, max: 5, windowMs: 1000 }] });
    expect(error.fields).toEqual(['rateLimit.limits[0].max', 'rateLimit.limits[0].windowMs']);
    expect(() =>
      parseHttpOptions({ algorithm, onLimit: () => undefined } as never, 'rateLimit', ['onLimit']),
    ).not.toThrow();
  });
});

describe('an adaptive limit alone', () => {
  const adaptive = adaptiveConcurrency();
  it('is a middleware without rate limits', () => {
    const config = parseHttpOptions({ adaptive } as never, 'rateLimit', []);
    expect([config.limits, config.adaptive]).toEqual([[], adaptive]);
  });

  it('nothing at all, or a priority without it, is still refused', () => {
    expect(rejectedField({})).toBe('rateLimit.algorithm');
    expect(rejectedField({ priority: () => 'critical' })).toBe('rateLimit.algorithm');
    expect(rejectedField({ algorithm, priority: () => 'critical' })).toBe('rateLimit.priority');
    expect(rejectedField({ adaptive, algorithm: null })).toBe('rateLimit.algorithm');
  });
});
