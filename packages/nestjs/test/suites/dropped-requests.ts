// A request whose client leaves while it is held (shaping) is dropped, and a denied one is answered by
// the guard itself: either way the guard's promise never settles, so the handler never runs. That
// pending chain must not keep the request reachable. Registered by dropped-requests.test.ts (Nest 12)
// and dropped-requests.nest11.test.ts (Nest 11).
import 'reflect-metadata';
import { setImmediate as turn } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Controller, Get } from '@nestjs/common';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fixedWindow, tokenBucket } from '@rl/core';
import { deferred, startRequest } from '@rl/test-support';
import { RateLimitModule } from '../../src/index.js';
import { NEST_MAJOR, PLATFORMS, startNestApp, type NestApp } from '../support/nest-app.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

describe.each(PLATFORMS)(`Nest ${NEST_MAJOR} on %s`, (platform) => {
  let app: NestApp | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it('a request dropped while held is collected (nothing holds the never-settling guard)', async () => {
    const handler = vi.fn();
    @Controller()
    class HeldController {
      @Get()
      get() {
        handler();
        return {};
      }
    }
    const held: WeakRef<object>[] = [];
    const abandoned = deferred();
    app = await startNestApp(platform, {
      imports: [
        RateLimitModule.forRoot({
          // One token a second: a second request waits a second for its slot.
          algorithm: tokenBucket({ capacity: 1, refillRate: 1 }),
          wait: { maxDelay: '5s' },
          key: (req: { headers: Record<string, unknown> }) => {
            if (req.headers['x-probe'] !== undefined) held.push(new WeakRef(req));
            return 'k';
          },
          observer: { hold: (event) => void (event.state === 'abandoned' && abandoned.resolve()) },
          global: true,
        }),
      ],
      controllers: [HeldController],
    });
    expect((await app.request('/')).status).toBe(200);
    const clients = Array.from({ length: 3 }, () => startRequest(app!.url, '/', { 'x-probe': '1' }));
    for (const client of clients) client.on('error', () => undefined);
    await vi.waitFor(() => expect(held).toHaveLength(3));
    for (const client of clients) client.destroy();
    await abandoned.promise;
    await vi.waitFor(
      async () => {
        gc();
        await turn();
        expect(held.filter((ref) => ref.deref() !== undefined)).toHaveLength(0);
      },
      { timeout: 10_000, interval: 50 },
    );
    expect(handler).toHaveBeenCalledTimes(1);
  });

  it('a denied request is collected once answered (nothing holds the never-settling guard)', async () => {
    const handler = vi.fn();
    @Controller()
    class LimitedController {
      @Get()
      get() {
        handler();
        return {};
      }
    }
    const denied: WeakRef<object>[] = [];
    app = await startNestApp(platform, {
      imports: [
        RateLimitModule.forRoot({
          algorithm: fixedWindow({ limit: 1, window: '1h' }),
          key: (req: { headers: Record<string, unknown> }) => {
            if (req.headers['x-probe'] !== undefined) denied.push(new WeakRef(req));
            return 'k';
          },
          global: true,
        }),
      ],
      controllers: [LimitedController],
    });
    expect((await app.request('/')).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await app.request('/', { headers: { 'x-probe': '1' } })).status).toBe(429);
    expect(denied).toHaveLength(3);
    await vi.waitFor(
      async () => {
        gc();
        await turn();
        expect(denied.filter((ref) => ref.deref() !== undefined)).toHaveLength(0);
      },
      { timeout: 10_000, interval: 50 },
    );
    expect(handler).toHaveBeenCalledTimes(1);
  });
});
