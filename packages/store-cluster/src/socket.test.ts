import { fixedWindow } from '@rl/core';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ClusterStore } from './cluster-store.js';
import { serveClusterStore } from './serve.js';

const limit = fixedWindow({ limit: 5, window: '1h' });
const dir = mkdtempSync(join(tmpdir(), 'rl-cluster-socket-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Calls `f` until it resolves, every 20 ms, for at most 3 s. */
async function eventually<T>(f: () => Promise<T>): Promise<T> {
  const end = Date.now() + 3_000;
  for (;;) {
    try {
      return await f();
    } catch (error) {
      if (Date.now() > end) throw error;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

describe('ClusterStore over a socket (the PM2 layout)', () => {
  it('a holder away is a store error at once; restarted, it is reached again and every key is forgotten', async () => {
    const socket = join(dir, 'holder.sock');
    let server = serveClusterStore({ socket });
    await server.listening;
    const store = new ClusterStore({ socket });
    const heard: (string | undefined)[] = [];
    const listener = (key: string | undefined) => heard.push(key);
    store.watchResets(listener);
    expect((await store.charge({ key: 'k', algorithm: limit, cost: 2 }, undefined)).decision.remaining).toBe(3);

    await server.close();
    // The first call after the close may be written before the worker sees its end: it fails too, at once.
    const away = await eventually(() =>
      store.peek('k', limit, 0, undefined).then(
        () => Promise.reject(new Error('still answered')),
        (error: unknown) => error,
      ),
    );
    expect(away).toMatchObject({
      code: 'RL_STORE_ERROR',
      message: expect.stringMatching(/not reachable|ended before it answered/),
    });

    server = serveClusterStore({ socket });
    await server.listening;
    const decision = await eventually(() => store.peek('k', limit, 0, undefined));
    expect(decision.remaining).toBe(5); // a new holder: new state
    expect(heard).toContain(undefined);
    store.close();
    await server.close();
  });

  it('a second holder on a live socket is refused; a stale socket file is taken over', async () => {
    const socket = join(dir, 'twice.sock');
    const first = serveClusterStore({ socket });
    await first.listening;
    await expect(serveClusterStore({ socket }).listening).rejects.toMatchObject({ code: 'EADDRINUSE' });
    await first.close();

    const stale = join(dir, 'stale.sock');
    writeFileSync(stale, ''); // left by a holder that was killed
    const taking = serveClusterStore({ socket: stale });
    await taking.listening;
    const store = new ClusterStore({ socket: stale });
    expect((await store.peek('k', limit, 0, undefined)).remaining).toBe(5);
    store.close();
    await taking.close();
  });
});
