/**
 * Idempotent charges on Redis with the defaults users get (batching, the deny cache, the timeout,
 * ioredis's options): retries from two processes charge each id once, on a standalone Redis and on a
 * Cluster; a charge that timed out under CLIENT PAUSE and its retry are one charge once Redis resumes;
 * 100,000 distinct ids on one key stay within `idempotencyMaxIds` (bytes counted with MEMORY USAGE).
 * The conformance suite runs the tables (replays, conflicts, the ttl, the bound, give-backs) on every
 * configuration of the store.
 */
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  createLimiter,
  fixedWindow,
  receiptOf,
  slidingWindowLog,
  tokenBucket,
  type Algorithm,
  type Decision,
} from '@rl/core';
import { HttpRateLimiter, directBinding } from '@rl/core/http';
import { RedisStore } from '@rl/store-redis';
import {
  nextMessage,
  useRedisDeployments,
  useWorkerScript,
  workersStarted,
  type WorkerMessage,
} from '@rl/test-support';
import { Redis } from 'ioredis';
import type { IdempotencyJob, IdempotencyResult } from './support/idempotency-worker.js';

/** True for a limiter's decision that replays an earlier one (its receipt: see `receiptOf`). */
const wasReplayed = (decision: Decision): boolean => receiptOf(decision).took === 'replayed';

const worker = useWorkerScript(fileURLToPath(new URL('./support/idempotency-worker.ts', import.meta.url)));

const redis = useRedisDeployments('idempotency');

interface Message extends WorkerMessage {
  result?: IdempotencyResult;
}

async function inTwoProcesses(job: IdempotencyJob): Promise<IdempotencyResult[]> {
  const workers: ChildProcess[] = [0, 1].map(() => worker.fork());
  try {
    await workersStarted(workers);
    const results = workers.map((w) => nextMessage<Message>(w, (m) => m.result !== undefined));
    for (const w of workers) w.send({ job });
    return (await Promise.all(results)).map((m) => m.result!);
  } finally {
    for (const w of workers) w.kill('SIGKILL');
  }
}

describe('idempotent charges across processes', () => {
  for (const deployment of ['standalone', 'cluster'] as const) {
    it(`${deployment}: 10 ids × 100 retries from two processes charge each id once at most, every id when Redis answers (idempotencyMaxReplays: 100)`, async () => {
      const prefix = redis.freshPrefix();
      const target = deployment === 'standalone' ? { url: redis.url } : { nodes: [...redis.nodes] };
      const ids = Array.from({ length: 10 }, (_, i) => `order-${i}`);
      // Replays enough for every retry: whichever of them reach Redis (a loaded machine's open circuit
      // answers some without asking), each id is charged once.
      const results = await inTwoProcesses({ target, prefix, ids, retries: 50, maxReplays: 100 });
      // With the default 50 ms timeout a loaded machine may answer some of the 1,000 charges in flight
      // by the failure policy (an open circuit answers without asking): what counts is what Redis
      // charged, never more than once an id; every id Redis answered for at least once; all ten when
      // nothing was answered by the failure policy.
      const answered = results.reduce((n, r) => n + r.admitted + r.failed, 0);
      expect(answered).toBe(1000);
      expect(results.reduce((n, r) => n + r.replayed, 0)).toBeLessThanOrEqual(990);
      const client =
        deployment === 'standalone' ? new Redis(redis.url) : new (await import('ioredis')).Cluster([...redis.nodes]);
      try {
        // A new client's first call waits for its connection (a Cluster's for its slots too): no store timeout on this count.
        const peek = createLimiter({
          algorithm: fixedWindow({ limit: 1000, window: '1h' }),
          store: new RedisStore({ client, prefix }),
          timeout: false,
        });
        const charged = 1000 - (await peek.peek('shared')).remaining;
        const answeredIds = new Set(results.flatMap((r) => r.answeredIds));
        expect(charged).toBeLessThanOrEqual(10);
        expect(charged).toBeGreaterThanOrEqual(answeredIds.size);
        if (results.every((r) => r.failed === 0)) expect(charged).toBe(10);
      } finally {
        client.disconnect();
      }
    });
  }
});

describe('a charge that timed out, and its retry', () => {
  it('CLIENT PAUSE past the timeout, then a retry with the same id: exactly one unit charged once Redis resumes', async () => {
    const client = new Redis(redis.url);
    const admin = new Redis(redis.url);
    const prefix = redis.freshPrefix();
    try {
      const store = new RedisStore({ client, prefix });
      const limiter = createLimiter({ algorithm: fixedWindow({ limit: 100, window: '1h' }), store, timeout: 50 });
      const untimed = createLimiter({ algorithm: fixedWindow({ limit: 100, window: '1h' }), store, timeout: false });
      await limiter.consume('warm', 1, { idempotencyKey: 'warm' });
      await admin.client('PAUSE', 300, 'WRITE');
      const first = await limiter.consume('k', 1, { idempotencyKey: 'pay-1' });
      expect(first.reason).toBe('timeout');
      // The client retries after its timeout: the charge and its retry both wait behind the pause.
      const retry = limiter.consume('k', 1, { idempotencyKey: 'pay-1' });
      // Sent after both on the same connection: answered once Redis has run them.
      expect((await untimed.peek('k')).remaining).toBe(99);
      expect((await retry).allowed || (await retry).reason === 'timeout').toBe(true);
      const again = await untimed.consume('k', 1, { idempotencyKey: 'pay-1' });
      expect([again.allowed, wasReplayed(again)]).toEqual([true, true]);
      expect((await untimed.peek('k')).remaining).toBe(99);
    } finally {
      await admin.client('UNPAUSE');
      client.disconnect();
      admin.disconnect();
    }
  });
});

describe('the ids one key remembers are bounded', () => {
  const algorithms: [string, Algorithm][] = [
    ['token bucket (a field of the bucket hash)', tokenBucket({ capacity: 1_000_000, refillRate: 1, interval: '1h' })],
    ['sliding log (a key of its own)', slidingWindowLog({ limit: 1_000_000, window: '1h' })],
  ];
  for (const [name, algorithm] of algorithms) {
    it(`${name}: 100,000 distinct ids on one key keep at most idempotencyMaxIds records (bytes counted)`, async () => {
      const client = new Redis(redis.url);
      const prefix = redis.freshPrefix();
      try {
        const store = new RedisStore({ client, prefix });
        // No timeout: 1,000 idempotent charges of one key in flight at once, each reading the key's 100 records, queue longer than 50 ms.
        const limiter = createLimiter({ algorithm, store, idempotencyMaxIds: 100, timeout: false });
        for (let batch = 0; batch < 100; batch++) {
          await Promise.all(
            Array.from({ length: 1000 }, (_, i) =>
              limiter.consume('k', 1, { idempotencyKey: `id-${batch * 1000 + i}` }),
            ),
          );
        }
        const [key] = store.redisKeys(`k`, algorithm);
        const field = store.redisField('k', algorithm);
        // 100 records of 50 bytes and `kept`.
        const held =
          field === undefined ? await client.getBuffer(`${key!}:idem`) : await client.hgetBuffer(key!, `#~${field}`);
        expect(held!.length).toBe(8 + 100 * 50);
        const bytes = Number(await client.memory('USAGE', field === undefined ? `${key!}:idem` : key!));
        expect(bytes).toBeLessThan(16_000);
        // The newest ids replay, the oldest are forgotten.
        expect(wasReplayed(await limiter.consume('k', 1, { idempotencyKey: 'id-99999' }))).toBe(true);
        expect(wasReplayed(await limiter.consume('k', 1, { idempotencyKey: 'id-0' }))).toBe(false);
      } finally {
        client.disconnect();
      }
      // 100,000 charges: within the default 30 s alone, not beside another Redis-heavy file on a busy machine.
    }, 120_000);
  }
});

describe("idempotent limits in a request's one call", () => {
  it('two limits replayed in one group call: no limit charged again, nothing called alone after it', async () => {
    const client = new Redis(redis.url);
    const prefix = redis.freshPrefix();
    try {
      const store = new RedisStore({ client, prefix });
      type Req = { id: string };
      const binding = directBinding<Req>({ owner: 'test', clientIp: () => '192.0.2.1', createStore: () => store });
      const hourly = fixedWindow({ limit: 100, window: '1h' });
      const http = new HttpRateLimiter<Req>(
        {
          store,
          prefix: 'p',
          key: () => 'k',
          timeout: false,
          idempotencyMaxIds: 1,
          idempotencyKey: (req) => req.id,
          logStoreErrors: false,
          limits: [
            { name: 'a', algorithm: hourly },
            { name: 'b', algorithm: hourly },
          ],
        },
        binding,
      );
      const first = (await http.evaluate({ id: 'X' }))!;
      let calls = await scriptCalls(client);
      const replay = (await http.evaluate({ id: 'X' }))!;
      expect([first.replayed, replay.replayed, replay.decisions.map((d) => wasReplayed(d!))]).toEqual([
        false,
        true,
        [true, true],
      ]);
      // The replay is one group call: no limit charged again alone after it.
      expect((await scriptCalls(client)) - calls).toBe(1);
      calls = await scriptCalls(client);
      // A replay beside a new id that evicts it (one id per key): still no limit charged twice.
      const [again, other] = await Promise.all([http.evaluate({ id: 'X' }), http.evaluate({ id: 'Y' })]);
      expect([again!.replayed, other!.replayed]).toEqual([true, false]);
      expect((await scriptCalls(client)) - calls).toBeLessThanOrEqual(2);
      for (const limiter of http.limiters) expect((await limiter.peek('k')).remaining).toBe(98);
    } finally {
      client.disconnect();
    }
  });
});

/** Script calls Redis has run so far (INFO commandstats). */
async function scriptCalls(client: Redis): Promise<number> {
  const info = await client.info('commandstats');
  let calls = 0;
  for (const command of ['evalsha', 'eval'])
    calls += Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(info)?.[1] ?? 0);
  return calls;
}
