import { expect, it } from 'vitest';
import { concurrency, fixedWindow, leakyBucket } from '@rl/core';
import type { SuiteContext } from './context.js';

const algorithm = fixedWindow({ limit: 5, window: '1m' });
const shaper = leakyBucket({ capacity: 5, leakRate: 1, mode: 'shape' });

/** Options every adapter shares, each wrong in one way, and the field its error names. */
const badOptions: [string, Record<string, unknown>, string][] = [
  ['no algorithm', {}, 'rateLimit.algorithm'],
  ['algorithm and limits', { algorithm, limits: [{ algorithm }] }, 'rateLimit.algorithm'],
  ['an unknown option', { algorithm, windowMs: 1000 }, 'rateLimit.windowMs'],
  ['another unknown option', { algorithm, duration: 60000 }, 'rateLimit.duration'],
  ['a bad algorithm', { algorithm: { limit: 5 } }, 'rateLimit.algorithm'],
  ['empty limits', { limits: [] }, 'rateLimit.limits'],
  ['an unknown limit option', { limits: [{ algorithm, max: 5 }] }, 'rateLimit.limits[0].max'],
  ['two limits with one name', { limits: [{ algorithm }, { algorithm }] }, 'rateLimit.limits[1].name'],
  ['a bad header format', { algorithm, headers: 'draft-5' }, 'rateLimit.headers'],
  ['another bad header format', { algorithm, headers: 'x-ratelimit' }, 'rateLimit.headers'],
  ['a zero cost', { algorithm, cost: 0 }, 'rateLimit.cost'],
  ['a cost of the wrong type', { algorithm, cost: '5' }, 'rateLimit.cost'],
  ['a key that is not a function', { algorithm, key: 'ip' }, 'rateLimit.key'],
  ['a skip that is not a function', { algorithm, skip: true }, 'rateLimit.skip'],
  ['a bad IPv6 prefix', { algorithm, ipv6Subnet: 200 }, 'rateLimit.ipv6Subnet'],
  ['an empty prefix', { algorithm, prefix: '' }, 'rateLimit.prefix'],
  [
    'wait with only concurrency limits',
    { algorithm: concurrency({ limit: 2 }), wait: { maxDelay: '1s' } },
    'rateLimit.wait',
  ],
  ["a maxDelay beyond a limit's horizon", { algorithm, wait: { maxDelay: '2m' } }, 'rateLimit.wait.maxDelay'],
  ['a shaping limit without wait', { algorithm: shaper }, 'rateLimit.wait'],
  ['a maxDelay beyond a Node timer', { algorithm: shaper, wait: { maxDelay: '30d' } }, 'rateLimit.wait.maxDelay'],
  ['a bad maxDelay', { algorithm: shaper, wait: { maxDelay: 'soon' } }, 'rateLimit.wait.maxDelay'],
  [
    'a cost on a concurrency limit',
    { limits: [{ algorithm: concurrency({ limit: 2 }), cost: 2 }] },
    'rateLimit.limits[0].cost',
  ],
  ['an onLimit that is not a function', { algorithm, onLimit: 'deny' }, 'rateLimit.onLimit'],
  ['another onLimit that is not a function', { algorithm, onLimit: 429 }, 'rateLimit.onLimit'],
  ['a bad failure policy', { algorithm, onStoreError: 'ignore' }, 'rateLimit.onStoreError'],
  // `undefined` alone is "not given": null is a bad value, on every framework (Fastify's store included).
  ['a null store', { algorithm, store: null }, 'rateLimit.store'],
  ['a null failure policy', { algorithm, onStoreError: null }, 'rateLimit.onStoreError'],
  ['a null timeout', { algorithm, timeout: null }, 'rateLimit.timeout'],
  ['a null onLimit', { algorithm, onLimit: null }, 'rateLimit.onLimit'],
  ['a null limit name', { limits: [{ algorithm, name: null }] }, 'rateLimit.limits[0].name'],
  ['a null limit store', { limits: [{ algorithm, store: null }] }, 'rateLimit.limits[0].store'],
  ['a dryRun that is not a boolean', { algorithm, dryRun: 'yes' }, 'rateLimit.dryRun'],
  ['a limit dryRun that is not a boolean', { limits: [{ algorithm, dryRun: 1 }] }, 'rateLimit.limits[0].dryRun'],
  [
    'a skipFailedRequests that is not a boolean',
    { algorithm, skipFailedRequests: 'true' },
    'rateLimit.skipFailedRequests',
  ],
  ['a null skipSuccessfulRequests', { algorithm, skipSuccessfulRequests: null }, 'rateLimit.skipSuccessfulRequests'],
  [
    'a requestWasSuccessful without skipping',
    { algorithm, requestWasSuccessful: () => true },
    'rateLimit.requestWasSuccessful',
  ],
  [
    'a requestWasSuccessful that is not a function',
    { algorithm, skipFailedRequests: true, requestWasSuccessful: true },
    'rateLimit.requestWasSuccessful',
  ],
  [
    'a maxCost above the largest count for a limit chosen per request',
    { algorithm: () => algorithm, cost: () => 1, maxCost: 1e16 },
    'rateLimit.maxCost',
  ],
  ['a null limit failure policy', { limits: [{ algorithm, onStoreError: null }] }, 'rateLimit.limits[0].onStoreError'],
  ['no replays of an idempotency key', { algorithm, idempotencyMaxReplays: 0 }, 'rateLimit.idempotencyMaxReplays'],
  ['a fraction of a replay', { algorithm, idempotencyMaxReplays: 1.5 }, 'rateLimit.idempotencyMaxReplays'],
];

/** Bad options are rejected when the middleware is created (or, for a plugin, registered). */
export function optionTests(t: SuiteContext): void {
  // The fields are written as rateLimit's; an adapter whose factory has another name reports them under it.
  const owned = (field: string): string => field.replace(/^rateLimit\./, `${t.adapter.owner ?? 'rateLimit'}.`);
  it.each(badOptions)('rejects %s', async (_label, options, field) => {
    await expect(t.adapter.mount({ middlewares: [options] })).rejects.toMatchObject({
      code: 'RL_INVALID_OPTION',
      field: owned(field),
    });
  });

  it('a middleware rejected for an option of its own (onLimit, requestWasSuccessful) takes no default namespace', (context) => {
    const namespaceOf = t.adapter.namespaceOf;
    if (namespaceOf === undefined)
      return context.skip(
        'the adapter has no middleware to create without mounting it (a Fastify plugin is only registered)',
      );
    const own = fixedWindow({ limit: 3, window: '17m' });
    const first = namespaceOf({ clock: () => 0, algorithm: own });
    expect(() => namespaceOf({ clock: () => 0, algorithm: own, onLimit: 'nope' })).toThrowError(
      expect.objectContaining({ field: owned('rateLimit.onLimit') }),
    );
    expect(() => namespaceOf({ clock: () => 0, algorithm: own, requestWasSuccessful: () => true })).toThrowError(
      expect.objectContaining({ field: owned('rateLimit.requestWasSuccessful') }),
    );
    // The next namespace after the first one's: `<base>#2` after `<base>`, `#n+1` after `#n`.
    const after = (prefix: string): string =>
      /#\d+$/.test(prefix) ? prefix.replace(/#(\d+)$/, (_m, n: string) => `#${Number(n) + 1}`) : `${prefix}#2`;
    expect(namespaceOf({ clock: () => 0, algorithm: own })).toBe(after(first));
  });

  it('rejects a constant cost larger than a limit could ever admit', async () => {
    await expect(t.adapter.mount({ middlewares: [{ algorithm, cost: 6 }] })).rejects.toMatchObject({
      code: 'RL_COST_EXCEEDS_CAPACITY',
    });
  });
}
