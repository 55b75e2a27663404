import { describe, expect, it } from 'vitest';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { InvalidOptionError } from '../errors.js';
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
    'store', 'prefix', 'key', 'cost', 'skip', 'headers', 'wait', 'ipv6Subnet', 'timers', 'dryRun', 'skipFailedRequests', 'skipSuccessfulRequests',
    // Passed through to createLimiter.
    'timeout', 'clock', 'onStoreError', 'denyCache', 'storeRetryInterval', 'storeFailureThreshold',
  ];
  it.each(middlewareOptions)('rateLimit.%s', (name) => {
    expect(rejectedField({ algorithm, [name]: null })).toBe(`rateLimit.${name}`);
  });

  it.each(['algorithm', 'limits'])('rateLimit.%s', (name) => {
    expect(rejectedField({ [name]: null })).toBe(`rateLimit.${name}`);
    // Beside the other one, a null is not "left out": exactly one of the two is given.
    expect(rejectedField({ ...(name === 'algorithm' ? { limits: [{ algorithm }] } : { algorithm }), [name]: null })).toBe('rateLimit.algorithm');
  });

  it.each(['name', 'key', 'cost', 'store', 'onStoreError', 'dryRun'])('rateLimit.limits[0].%s', (name) => {
    expect(rejectedField({ limits: [{ algorithm, [name]: null }] })).toBe(`rateLimit.limits[0].${name}`);
  });

  it('rateLimit.limits[0].algorithm, rateLimit.limits[0] and rateLimit', () => {
    expect(rejectedField({ limits: [{ algorithm: null }] })).toBe('rateLimit.limits[0].algorithm');
    expect(rejectedField({ limits: [null] })).toBe('rateLimit.limits[0]');
    expect(() => parseHttpOptions(null as never, 'rateLimit', [])).toThrow(expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'rateLimit' }));
  });

  it('undefined is "not given"', () => {
    const config = parseHttpOptions({ algorithm, store: undefined, key: undefined, onStoreError: undefined, timeout: undefined }, 'rateLimit', []);
    expect(config.store).toBeUndefined();
    expect(config.key).toBeUndefined();
    expect(config.limiterOptions).toEqual({});
    expect(parseHttpOptions({ limits: [{ algorithm, name: undefined, store: undefined }] }, 'rateLimit', []).limits[0]!.name).toBe('5-in-1m');
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
    expect(parseHttpOptions({ algorithm: () => algorithm, wait: { maxDelay: '1s' } }, 'rateLimit', []).maxDelayMs).toBe(1000);
    expect(parseHttpOptions({ algorithm: () => algorithm, cost: () => 1, maxCost: 1e12 }, 'rateLimit', []).limits[0]!.maxCost).toBe(1e12);
  });
});
