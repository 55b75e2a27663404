/**
 * node-redis (4, 5, 6) writes the commands it is given in a `setImmediate` of its own. What the store
 * does about it, on a real client and Redis: the answers of several calls read at once are handed on
 * one per write of the client (src/clients/reply-pacer.ts), and from node-redis 6 on a call made while
 * the client is ready goes without the client's command timeout, one made while it connects keeps it
 * (src/clients/node-redis.ts).
 */
import net from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { createLimiter, tokenBucket, type Decision } from '@rl/core';
import { RedisStore } from '@rl/store-redis';
import { useRedis } from '@rl/test-support';
import { createClient } from 'redis';
import { NODE_REDIS_4, NODE_REDIS_5, NODE_REDIS_6 } from './support/clients.js';

const redis = useRedis('node-redis-writes');
const algorithm = tokenBucket({ capacity: 5, refillRate: 1, interval: '1h' });

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Counts the script calls that reach the sockets of this process: a call's command is written while
 * the socket is corked (node-redis corks it for a write), and counted when the socket is uncorked.
 */
function countWrittenCalls(): { readonly written: number; restore(): void } {
  const { write, uncork } = net.Socket.prototype;
  let corked = 0;
  let written = 0;
  const writes = vi.spyOn(net.Socket.prototype, 'write').mockImplementation(function (
    this: net.Socket,
    ...args: Parameters<net.Socket['write']>
  ) {
    const chunk = args[0];
    if ((typeof chunk === 'string' || Buffer.isBuffer(chunk)) && chunk.includes('EVALSHA')) corked++;
    return write.apply(this, args);
  });
  const uncorks = vi.spyOn(net.Socket.prototype, 'uncork').mockImplementation(function (this: net.Socket) {
    written += corked;
    corked = 0;
    uncork.call(this);
  });
  return {
    get written() {
      return written;
    },
    restore() {
      writes.mockRestore();
      uncorks.mockRestore();
    },
  };
}

describe.each([NODE_REDIS_6, NODE_REDIS_5, NODE_REDIS_4])('$name', (kind) => {
  it('the answers of three calls read at once are handed on one per write of the client: each after the call the one before it caused was written', async () => {
    const client = await kind.standalone(redis.url);
    const calls = countWrittenCalls();
    try {
      const store = new RedisStore({ client, prefix: redis.freshPrefix(), batch: false });
      const limiter = createLimiter({ algorithm, store, timeout: false, denyCache: false, clock: () => 1_000_000 });
      await limiter.consume('warm');
      const base = calls.written;
      // Redis holds the three calls (scripts that write) until UNPAUSE, then runs them at once: their answers
      // come in one read.
      await redis.client.client('PAUSE', 10_000, 'WRITE');
      /** Per answer handed on: the calls written by then (after the three). */
      const seen: number[] = [];
      const followers: Promise<Decision>[] = [];
      const first = ['a', 'b', 'c'].map((key) =>
        limiter.consume(key).then(() => {
          seen.push(calls.written - base - 3);
          followers.push(limiter.consume(`${key}2`));
        }),
      );
      for (let i = 0; i < 50 && calls.written < base + 3; i++) await turn();
      expect(calls.written - base).toBe(3);
      await redis.client.client('UNPAUSE');
      await Promise.all(first);
      const after = await Promise.all(followers);
      // Without pacing: [0, 0, 0] (the three followers in one write, after the three answers).
      expect(seen).toEqual([0, 1, 2]);
      expect(after.map((d) => d.remaining)).toEqual([4, 4, 4]);
    } finally {
      calls.restore();
      await redis.client.client('UNPAUSE');
      await kind.close(client);
    }
  });
});

describe('node-redis 6: the command timeout (an AbortSignal.timeout per command, 5 s by default)', () => {
  it('a call made while the client is ready has none (it is written in the same turn); one made while it connects keeps the client’s', async () => {
    const ready = await NODE_REDIS_6.standalone(redis.url);
    // Port 1: refused at once; the client stays open, trying again, its commands queued.
    const connecting = createClient({ url: 'redis://127.0.0.1:1' });
    connecting.on('error', () => {});
    const opening = connecting.connect().catch(() => {});
    const timeouts = vi.spyOn(AbortSignal, 'timeout');
    try {
      const limiter = createLimiter({
        algorithm,
        store: new RedisStore({ client: ready, prefix: redis.freshPrefix() }),
        timeout: false,
        denyCache: false,
      });
      await Promise.all(Array.from({ length: 20 }, (_, i) => limiter.consume(`k${i % 4}`)));
      expect(timeouts).not.toHaveBeenCalled();

      const queued = new RedisStore({ client: connecting, prefix: redis.freshPrefix(), batch: false });
      expect(connecting.isReady).toBe(false);
      const pending = queued.charge({ key: 'k', algorithm, cost: 1 }, 1_000_000).catch((error: unknown) => error);
      await turn();
      expect(timeouts).toHaveBeenCalledTimes(1);
      expect(timeouts).toHaveBeenCalledWith(5000);
      connecting.destroy();
      expect(await pending).toBeInstanceOf(Error);
    } finally {
      timeouts.mockRestore();
      if (connecting.isOpen) connecting.destroy();
      await opening;
      await NODE_REDIS_6.close(ready);
    }
  });
});
