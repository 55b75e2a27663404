import { connect, type Socket } from 'node:net';
import type { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { fixedWindow, slidingWindowLog, tokenBucket } from '@rl/core';
import { members } from '../http-client.js';
import type { SuiteContext } from './context.js';

/** Script calls Redis has run so far (`EVALSHA` and `EVAL` in `INFO commandstats`). */
async function scriptCalls(client: Redis): Promise<number> {
  const info = await client.info('commandstats');
  return (
    Number(/^cmdstat_evalsha:calls=(\d+)/m.exec(info)?.[1] ?? 0) +
    Number(/^cmdstat_eval:calls=(\d+)/m.exec(info)?.[1] ?? 0)
  );
}

/** A connected socket to `url`'s host and port. */
function open(url: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Reads HTTP/1.1 responses from a keep-alive `socket`: `next()` is the status of the next one (Content-Length bodies). */
function responses(socket: Socket): { next(): Promise<number> } {
  let text = '';
  const waiting: ((status: number) => void)[] = [];
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => {
    text += chunk;
    for (;;) {
      const end = text.indexOf('\r\n\r\n');
      if (end === -1) return;
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(text.slice(0, end))?.[1] ?? 0);
      if (text.length < end + 4 + length) return;
      const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(text)?.[1]);
      text = text.slice(end + 4 + length);
      waiting.shift()?.(status);
    }
  });
  return { next: () => new Promise((resolve) => waiting.push(resolve)) };
}

const get = (client: string): string => `GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Client: ${client}\r\n\r\n`;

/**
 * The Redis store batches the decisions issued in one turn of the event loop (RedisStore `batch`):
 * requests the server reads in the same I/O phase share one script call after the first.
 */
export function batchingTests(t: SuiteContext, redis: () => Redis): void {
  it('requests read in the same turn of the event loop share a script call: the first alone, the others in one batch', async () => {
    const app = await t.open({
      middlewares: [
        {
          algorithm: tokenBucket({ capacity: 5, refillRate: 1 }),
          key: (req: unknown) => t.adapter.view(req).header('x-client') ?? 'none',
        },
      ],
    });
    // Scripts loaded (alone and batched) and the app warm: two requests at once, first.
    const warm = await Promise.all([
      app.request('/', { headers: { 'x-client': 'warm' } }),
      app.request('/', { headers: { 'x-client': 'warm' } }),
    ]);
    expect(warm.map((res) => res.status)).toEqual([200, 200]);
    // Eight keep-alive connections, each accepted and used once (a server accepts one connection per
    // turn), as a load balancer's or a busy client's are.
    const sockets = await Promise.all(Array.from({ length: 8 }, () => open(app.url!)));
    const readers = sockets.map(responses);
    for (const [i, socket] of sockets.entries()) {
      const status = readers[i]!.next();
      socket.write(get(`first-${i}`));
      expect(await status).toBe(200);
    }
    // Two turns for the server to finish those responses (a socket is read again once its response
    // has finished), then all eight written before the server runs again: it reads them in one I/O phase.
    for (let i = 0; i < 2; i++) await new Promise((resolve) => setImmediate(resolve));
    const before = await scriptCalls(redis());
    const statuses = readers.map((reader) => reader.next());
    for (const [i, socket] of sockets.entries()) socket.write(get(`c${i % 2}`));
    // Clients c0 and c1 send four each, within their capacity of 5.
    expect(await Promise.all(statuses)).toEqual(Array.from({ length: 8 }, () => 200));
    // The first alone and the others in one batch: 2 calls; 3 on a loaded machine that reads one of
    // the sockets a turn late. One call per request would be 8.
    expect(await scriptCalls(redis())).toBeLessThanOrEqual(before + 3);
    for (const socket of sockets) socket.destroy();
    // Each decision is its own: four units of each client's five are gone.
    for (const client of ['c0', 'c1'])
      expect((await app.request('/', { headers: { 'x-client': client } })).body).toEqual({ remaining: 0 });
  });

  it('a request with three limits is one script call, and a denial by the last charges none of the others', async () => {
    const user = (req: unknown) => t.adapter.view(req).header('x-client') ?? 'none';
    const app = await t.open({
      middlewares: [
        {
          limits: [
            {
              name: 'minute',
              algorithm: tokenBucket({ capacity: 10, refillRate: 1, interval: '1m' }),
              key: () => 'all',
            },
            { name: 'hour', algorithm: fixedWindow({ limit: 10, window: '1h' }), key: () => 'all' },
            { name: 'burst', algorithm: slidingWindowLog({ limit: 2, window: '1h' }), key: user },
          ],
        },
      ],
    });
    // The scripts loaded (an EVALSHA answered NOSCRIPT, then EVAL), then one request at a time.
    expect((await app.request('/', { headers: { 'x-client': 'warm' } })).status).toBe(200);
    const before = await scriptCalls(redis());
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await app.request('/', { headers: { 'x-client': 'ann' } })).status);
    expect(statuses).toEqual([200, 200, 429]);
    expect((await scriptCalls(redis())) - before).toBe(3);
    // Ann's denial (by `burst`) took nothing from the shared `minute` and `hour`: after warm, two of
    // Ann's and Bob's, 6 of 10 are left in each.
    const bob = await app.request('/', { headers: { 'x-client': 'bob' } });
    expect(bob.status).toBe(200);
    const left = Object.fromEntries(members(bob.headers['ratelimit']).map((m) => [m.name, m.params.r]));
    expect([left.minute, left.hour]).toEqual([6, 6]);
  });
}
