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

/** A controller whose `GET /` calls `handler` (which counts the requests that reached it). */
function controllerCalling(handler: () => void): new () => object {
  @Controller()
  class CountingController {
    @Get()
    get() {
      handler();
      return {};
    }
  }
  return CountingController;
}

/** The key function: every request keyed `k`, a reference to each request with `x-probe` kept in `refs`. */
const probedKey =
  (refs: WeakRef<object>[]) =>
  (req: { headers: Record<string, unknown> }): string => {
    if (req.headers['x-probe'] !== undefined) refs.push(new WeakRef(req));
    return 'k';
  };

/** Waits (10 s at most) until a garbage collection has collected every request of `refs`. */
async function expectCollected(refs: readonly WeakRef<object>[]): Promise<void> {
  await vi.waitFor(
    async () => {
      gc();
      await turn();
      expect(refs.filter((ref) => ref.deref() !== undefined)).toHaveLength(0);
    },
    { timeout: 10_000, interval: 50 },
  );
}

describe.each(PLATFORMS)(`Nest ${NEST_MAJOR} on %s`, (platform) => {
  let app: NestApp | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it('a request dropped while held is collected (nothing holds the never-settling guard)', async () => {
    const handler = vi.fn();
    const held: WeakRef<object>[] = [];
    const abandoned = deferred();
    app = await startNestApp(platform, {
      imports: [
        RateLimitModule.forRoot({
          // One token a second: a second request waits a second for its slot.
          algorithm: tokenBucket({ capacity: 1, refillRate: 1 }),
          wait: { maxDelay: '5s' },
          key: probedKey(held),
          observer: { hold: (event) => void (event.state === 'abandoned' && abandoned.resolve()) },
          global: true,
        }),
      ],
      controllers: [controllerCalling(handler)],
    });
    expect((await app.request('/')).status).toBe(200);
    const clients = Array.from({ length: 3 }, () => startRequest(app!.url, '/', { 'x-probe': '1' }));
    for (const client of clients) client.on('error', () => undefined);
    await vi.waitFor(() => expect(held).toHaveLength(3));
    for (const client of clients) client.destroy();
    await abandoned.promise;
    await expectCollected(held);
    expect(handler).toHaveBeenCalledTimes(1);
  });

  it('a denied request is collected once answered (nothing holds the never-settling guard)', async () => {
    const handler = vi.fn();
    const denied: WeakRef<object>[] = [];
    app = await startNestApp(platform, {
      imports: [
        RateLimitModule.forRoot({
          algorithm: fixedWindow({ limit: 1, window: '1h' }),
          key: probedKey(denied),
          global: true,
        }),
      ],
      controllers: [controllerCalling(handler)],
    });
    expect((await app.request('/')).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await app.request('/', { headers: { 'x-probe': '1' } })).status).toBe(429);
    expect(denied).toHaveLength(3);
    await expectCollected(denied);
    expect(handler).toHaveBeenCalledTimes(1);
  });
});
