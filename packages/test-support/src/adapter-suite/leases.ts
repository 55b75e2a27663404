import { createLimiter, fixedWindow, slidingWindowLog } from '@rl/core';
import { expect, it } from 'vitest';
import { members } from '../http-client.js';
import { T0, type SuiteContext } from './context.js';

/** The `r` of the RateLimit member `name` (the only one when undefined). */
function remainingOf(header: string | string[] | undefined, name?: string): number | undefined {
  const all = members(header);
  return (name === undefined ? all[0] : all.find((m) => m.name === name))?.params.r as number | undefined;
}

/**
 * Quota leases through the middleware (`lease`, and a limit's own `limits[i].lease`): the same
 * responses and headers as without a lease for one instance, a block per `units` requests in the
 * store, and a request denied by another limit gives its units back to the block.
 */
export function leaseTests(t: SuiteContext): void {
  const hourly = fixedWindow({ limit: 25, window: '1h' });
  const peek = (prefix: string, key: string) =>
    createLimiter({ algorithm: hourly, store: t.store, clock: () => T0, prefix }).peek(key);

  it('a leased limit answers as one without: 25 admitted with remaining 24 … 0, then 429; the store holds blocks of 10', async () => {
    const app = await t.open({
      middlewares: [{ algorithm: hourly, key: () => 'all', lease: { units: 10 }, prefix: 'leased' }],
    });
    const statuses: number[] = [];
    const remaining: (number | undefined)[] = [];
    for (let i = 0; i < 26; i++) {
      const res = await app.request('/');
      statuses.push(res.status);
      remaining.push(remainingOf(res.headers['ratelimit']));
    }
    expect(statuses).toEqual([...Array.from({ length: 25 }, () => 200), 429]);
    expect(remaining).toEqual([...Array.from({ length: 25 }, (_, i) => 24 - i), 0]);
    // The store counts what was leased: 25 of 25 (the last block was 5: a block of 10 did not fit, the requests then came alone).
    expect((await peek('leased', 'all')).remaining).toBe(0);
  });

  it('limits[i].lease: a global limit leased, a per-client limit not; a denial by the client limit gives its unit back to the block', async () => {
    const client = (req: unknown) => t.adapter.view(req).header('x-client') ?? 'none';
    const app = await t.open({
      middlewares: [
        {
          prefix: 'mixed',
          limits: [
            { name: 'global', algorithm: hourly, key: () => 'all', lease: { units: 10 } },
            { name: 'client', algorithm: slidingWindowLog({ limit: 2, window: '1h' }), key: client },
          ],
        },
      ],
    });
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await app.request('/', { headers: { 'x-client': 'ann' } })).status);
    expect(statuses).toEqual([200, 200, 429]);
    const bob = await app.request('/', { headers: { 'x-client': 'bob' } });
    expect(bob.status).toBe(200);
    // Three admitted in all (Ann's denial took nothing): 22 left of the global 25, the block's own unspent included.
    expect(remainingOf(bob.headers['ratelimit'], 'global')).toBe(22);
    // The store has the one block of 10.
    expect((await peek('mixed:global', 'all')).remaining).toBe(15);
  });

  it('refuses a lease with wait when the middleware is created', async () => {
    await expect(
      t.open({ middlewares: [{ algorithm: hourly, lease: { units: 5 }, wait: { maxDelay: '1s' } }] }),
    ).rejects.toThrow(/wait/);
  });
}
