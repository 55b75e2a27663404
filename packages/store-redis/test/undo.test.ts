/**
 * A give-back (undo) of the sliding log is bounded like a decision: it reads the log from its tail and
 * stops at the record it removes, so its cost does not grow with the log. Measured as a count: the
 * list elements the script's LRANGE calls cover, read from MONITOR (which shows the commands a script
 * runs). The records it removes are those the memory store's undo removes (the newest of that cost).
 */
import type { Redis } from 'ioredis5';
import { describe, expect, it } from 'vitest';
import { slidingWindowLog } from '@rl/core';
import { MemoryStore } from '@rl/store-memory';
import { RedisStore } from '@rl/store-redis';
import { useRedis } from '@rl/test-support';

const redis = useRedis('undo');

/**
 * The list elements of `key` that LRANGE calls read while `action` runs (the list holds `length`
 * elements meanwhile: a script's reads come before its LREM). MONITOR sees every command, a script's
 * included; a final ECHO marks the end of the action's commands.
 */
async function elementsRead(client: Redis, key: string, action: () => Promise<unknown>): Promise<number> {
  const length = await client.llen(key);
  const monitor = await client.monitor();
  const marker = `undo-test-end-${Math.random()}`;
  let elements = 0;
  const ended = new Promise<void>((resolve) => {
    monitor.on('monitor', (_time: string, args: string[]) => {
      const command = args[0]?.toLowerCase();
      if (command === 'echo' && args[1] === marker) resolve();
      if (command !== 'lrange' || args[1] !== key) return;
      const at = (index: number) => (index < 0 ? length + index : index);
      const from = Math.max(0, at(Number(args[2])));
      const to = Math.min(length - 1, at(Number(args[3])));
      elements += Math.max(0, to - from + 1);
    });
  });
  try {
    await action();
    await client.echo(marker);
    await ended;
  } finally {
    monitor.disconnect();
  }
  return elements;
}

/** Consumes `count` units of cost 1 on `key`, 500 at a time. */
async function fill(
  store: RedisStore,
  key: string,
  log: ReturnType<typeof slidingWindowLog>,
  count: number,
): Promise<void> {
  for (let done = 0; done < count; done += 500) {
    await Promise.all(
      Array.from({ length: Math.min(500, count - done) }, () =>
        store.charge({ key, algorithm: log, cost: 1 }, undefined),
      ),
    );
  }
}

describe('undo on a long sliding log', () => {
  it('reads a bounded number of records, however long the log (4000 records: 16 elements)', async () => {
    const client = redis.client;
    const store = new RedisStore({ client, prefix: redis.freshPrefix() });
    const log = slidingWindowLog({ limit: 10_000, window: '1h' });
    await fill(store, 'global', log, 4000);
    const [list] = store.redisKeys('global', log);
    const read = await elementsRead(client, list!, () =>
      store.giveBack({ key: 'global', algorithm: log, cost: 1 }, undefined),
    );
    // The first 8 records (every script reads them, to know a short log whole) and the last 8 (the
    // first chunk from the tail, where the record to remove is).
    expect(read).toBe(16);
    expect(await client.llen(list!)).toBe(3999);
    expect((await store.peek('global', log, 0, undefined)).remaining).toBe(10_000 - 3999);
    // A log of 2.5 times as many records (full: 10,000) costs an undo the same.
    await fill(store, 'global', log, 6001);
    expect(await client.llen(list!)).toBe(10_000);
    expect(
      await elementsRead(client, list!, () => store.giveBack({ key: 'global', algorithm: log, cost: 1 }, undefined)),
    ).toBe(16);
  });

  it('reads only as far back as the record it removes, in growing chunks', async () => {
    const client = redis.client;
    const store = new RedisStore({ client, prefix: redis.freshPrefix() });
    const log = slidingWindowLog({ limit: 10_000, window: '1h' });
    await store.charge({ key: 'k', algorithm: log, cost: 2 }, undefined);
    await fill(store, 'k', log, 2000);
    const [list] = store.redisKeys('k', log);
    // The record of cost 2 is the oldest of 2001: the chunks from the tail (8, 16, …, 256, 256, …)
    // reach it after reading the whole log once, and the head's 8 records.
    expect(
      await elementsRead(client, list!, () => store.giveBack({ key: 'k', algorithm: log, cost: 2 }, undefined)),
    ).toBe(2001 + 8);
    expect(await client.llen(list!)).toBe(2000);
    // Another cost 2 recorded after 20 records of cost 1: 8 + 16 from the tail reach it.
    await store.charge({ key: 'k', algorithm: log, cost: 2 }, undefined);
    await fill(store, 'k', log, 20);
    expect(
      await elementsRead(client, list!, () => store.giveBack({ key: 'k', algorithm: log, cost: 2 }, undefined)),
    ).toBe(8 + 8 + 16);
    expect((await store.peek('k', log, 0, undefined)).remaining).toBe(10_000 - 2020);
  });

  it('removes what the memory store removes, at every depth of a long log with mixed costs', async () => {
    const store = new RedisStore({ client: redis.client, prefix: redis.freshPrefix() });
    const memory = new MemoryStore({ sweepInterval: false });
    const log = slidingWindowLog({ limit: 5000, window: 10_000, countDenied: true });
    const costs = [1, 2, 0.5, 1.5, 3];
    let now = 1_000;
    const both = async (op: 'consume' | 'undo', cost: number) => {
      now += 1;
      if (op === 'consume') {
        const [fromRedis, fromMemory] = await Promise.all([
          store.charge({ key: 'k', algorithm: log, cost }, now),
          memory.charge({ key: 'k', algorithm: log, cost }, now),
        ]).then(([r, m]) => [r.decision, m.decision] as const);
        expect(fromRedis).toEqual(fromMemory);
      } else {
        await Promise.all([
          store.giveBack({ key: 'k', algorithm: log, cost }, now),
          memory.giveBack({ key: 'k', algorithm: log, cost }, now),
        ]);
      }
      expect(await store.peek('k', log, 0, now)).toEqual(memory.peek('k', log, 0, now));
    };
    // 700 records, one of cost 3 in every 100: undos of 3 reach 1 to 700 records back; a cost never
    // recorded (7) reads the whole log and changes nothing, on both stores.
    for (let i = 0; i < 700; i++) await both('consume', i % 100 === 0 ? 3 : costs[i % 4]!);
    for (const cost of [3, 7, 1.5, 3, 0.5, 3, 2, 3, 3, 3, 3, 3]) await both('undo', cost);
    memory.close();
  });
});
