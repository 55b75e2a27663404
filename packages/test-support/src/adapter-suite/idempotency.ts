import { createLimiter, fixedWindow } from '@rl/core';
import { expect, it } from 'vitest';
import { members } from '../http-client.js';
import type { MountedApp } from './adapter.js';
import { T0, type SuiteContext } from './context.js';

/** The `r` of the only RateLimit member. */
const remainingOf = (header: string | string[] | undefined): number | undefined =>
  members(header)[0]?.params.r as number | undefined;

/**
 * Idempotent retries through the middleware (`idempotencyKey`): a retry with the same key, path and
 * cost is answered with the earlier decision and the current headers, charged nothing, and the
 * handler sees `replayed`; a denial is not replayed; a key reused on another path is charged anew; a
 * ban outranks a replay; past `idempotencyMaxReplays` a retry is charged.
 */
export function idempotencyTests(t: SuiteContext): void {
  const hourly = fixedWindow({ limit: 100, window: '1h' });
  const peek = (prefix: string) =>
    createLimiter({ algorithm: hourly, store: t.store, clock: () => T0, prefix }).peek('ann');
  const idempotencyKey = (req: unknown) => t.adapter.view(req).header('idempotency-key');
  const flags = (request: { rateLimit: unknown }) => {
    const result = request.rateLimit as { replayed: boolean; idempotencyConflict: boolean };
    return { headers: { 'x-replayed': String(result.replayed), 'x-conflict': String(result.idempotencyConflict) } };
  };
  const withKey = (key: string) => ({ headers: { 'idempotency-key': key } });
  /** `times` requests of `/orders` with one Idempotency-Key, one after another: each one's status, RateLimit `r` and X-Replayed. */
  const retried = async (app: MountedApp, key: string, times: number) => {
    const seen: [number, number | undefined, unknown][] = [];
    for (let i = 0; i < times; i++) {
      const res = await app.request('/orders', withKey(key));
      seen.push([res.status, remainingOf(res.headers['ratelimit']), res.headers['x-replayed']]);
    }
    return seen;
  };

  it('retries with the same Idempotency-Key are answered with the first decision and the current headers, charged once', async () => {
    const app = await t.open({
      middlewares: [{ algorithm: hourly, key: () => 'ann', prefix: 'retries', idempotencyKey }],
      handler: flags,
    });
    expect(await retried(app, '"8e03978e-40d5"', 3)).toEqual([
      [200, 99, 'false'],
      [200, 99, 'true'],
      [200, 99, 'true'],
    ]);
    expect(remainingOf((await app.request('/orders')).headers['ratelimit'])).toBe(98);
    expect((await peek('retries')).remaining).toBe(98);
  });

  it('a denied request is not replayed: its retry is decided afresh', async () => {
    const app = await t.open({
      middlewares: [
        { algorithm: fixedWindow({ limit: 1, window: '1h' }), key: () => 'ann', prefix: 'denied', idempotencyKey },
      ],
    });
    expect((await app.request('/')).status).toBe(200);
    expect((await app.request('/', withKey('k-1'))).status).toBe(429);
    expect((await app.request('/', withKey('k-1'))).status).toBe(429);
  });

  it('a key reused on another path is charged as a new request and flagged a conflict', async () => {
    const app = await t.open({
      middlewares: [{ algorithm: hourly, key: () => 'ann', prefix: 'conflict', idempotencyKey }],
      handler: flags,
    });
    await app.request('/orders', withKey('k-2'));
    const other = await app.request('/refunds', withKey('k-2'));
    expect([
      other.status,
      remainingOf(other.headers['ratelimit']),
      other.headers['x-conflict'],
      other.headers['x-replayed'],
    ]).toEqual([200, 98, 'true', 'false']);
  });

  it("a banned client replaying an admitted Idempotency-Key is denied: 429 with the ban's Retry-After, 0 handler runs while banned; unbanned, the retry replays", async () => {
    let runs = 0;
    const handler = (request: { rateLimit: unknown }) => {
      runs++;
      return flags(request);
    };
    const app = await t.open({
      middlewares: [{ algorithm: hourly, key: () => 'ann', prefix: 'banned', bans: true, idempotencyKey }],
      handler,
    });
    expect((await app.request('/orders', withKey('pay-1'))).status).toBe(200);
    await app.controls.blockKey('ann', '1h');
    const denied: [number, unknown][] = [];
    for (let i = 0; i < 5; i++) {
      const res = await app.request('/orders', withKey('pay-1'));
      denied.push([res.status, res.headers['retry-after']]);
    }
    expect(denied).toEqual(Array.from({ length: 5 }, () => [429, '3600']));
    expect(runs).toBe(1);
    await app.controls.unblockKey('ann');
    const replay = await app.request('/orders', withKey('pay-1'));
    expect([replay.status, replay.headers['x-replayed'], remainingOf(replay.headers['ratelimit']), runs]).toEqual([
      200,
      'true',
      99,
      2,
    ]);
  });

  it('idempotencyMaxReplays: 2 answers two retries again, then charges the third as a new request (remembered afresh)', async () => {
    const app = await t.open({
      middlewares: [
        { algorithm: hourly, key: () => 'ann', prefix: 'bounded', idempotencyKey, idempotencyMaxReplays: 2 },
      ],
      handler: flags,
    });
    expect(await retried(app, 'pay-2', 5)).toEqual([
      [200, 99, 'false'],
      [200, 99, 'true'],
      [200, 99, 'true'],
      [200, 98, 'false'],
      [200, 98, 'true'],
    ]);
  });

  it('refuses an idempotency key that is not a string: the framework error path, nothing charged', async () => {
    const app = await t.open({
      middlewares: [{ algorithm: hourly, key: () => 'ann', prefix: 'bad-key', idempotencyKey: () => 42 }],
    });
    const res = await app.request('/');
    expect([res.status, (res.body as { code?: string }).code]).toEqual([500, 'RL_INVALID_OPTION']);
    expect((await peek('bad-key')).remaining).toBe(100);
  });
}
