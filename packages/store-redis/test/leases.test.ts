/**
 * Quota leases across processes (`lease: { units: 50 }`), with the defaults users get (batching, the
 * deny cache, the timeout, ioredis's options): 4 processes × 20,000 decisions on one hot key, on a
 * standalone Redis and on a Cluster (one global key: the hot-slot case). Each round is a window of
 * its own: in none may more than the limit be admitted, whichever process admitted it, and the script
 * calls Redis ran (INFO commandstats) stay within one per block. A holder killed with SIGKILL costs
 * the others at most its `units` and never causes over-admission: stopped mid-traffic, with a block
 * in flight, the store charged it at most `units` more than it admitted.
 */
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  nextMessage,
  releasedTogether,
  useRedisDeployments,
  useWorkerScript,
  workersStarted,
  type WorkerMessage,
} from '@rl/test-support';
import { createLimiter, fixedWindow } from '@rl/core';
import { RedisStore } from '@rl/store-redis';
import { Cluster, Redis } from 'ioredis';
import { LIMIT_PREFIX, roundTime, type LeaseJob, type LeaseResult } from './support/lease-job.js';

const PROCESSES = 4;
const ROUNDS = 20;
const PER_ROUND = 1000;
const LIMIT = 1000;
const UNITS = 50;
const worker = useWorkerScript(fileURLToPath(new URL('./support/lease-worker.ts', import.meta.url)));

const redis = useRedisDeployments('leases');

interface Message extends WorkerMessage {
  holding?: boolean;
  spent?: number;
}

const startWorker = (): ChildProcess => worker.fork();

/** The standalone server's address (its masters, for a count of script calls). */
function standaloneNode(): { host: string; port: number } {
  const { hostname, port } = new URL(redis.url);
  return { host: hostname, port: Number(port) };
}

/** Script calls (EVALSHA and EVAL) the masters have run so far. */
async function scriptCalls(nodes: readonly { host: string; port: number }[]): Promise<number> {
  let calls = 0;
  for (const node of nodes) {
    const client = new Redis(node.port, node.host);
    const info = await client.info('commandstats');
    for (const command of ['evalsha', 'eval'])
      calls += Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(info)?.[1] ?? 0);
    client.disconnect();
  }
  return calls;
}

/** Runs `job` in `count` fresh processes released together; their results. */
async function contend(job: Omit<LeaseJob, 'mode'>, count = PROCESSES): Promise<LeaseResult[]> {
  const workers = Array.from({ length: count }, startWorker);
  try {
    await workersStarted(workers);
    const jobs: LeaseJob[] = workers.map(() => ({ ...job, mode: 'rounds' }));
    return await releasedTogether<LeaseResult>(workers, jobs);
  } finally {
    for (const w of workers) w.kill('SIGKILL');
  }
}

describe.each([
  { name: 'standalone', target: () => ({ url: redis.url }), nodes: () => [standaloneNode()] },
  { name: 'cluster', target: () => ({ nodes: [...redis.nodes] }), nodes: () => [...redis.nodes] },
])('quota leases on $name Redis', ({ name, target, nodes }) => {
  it(`${PROCESSES} processes × ${ROUNDS * PER_ROUND} decisions on one hot key, units ${UNITS}: at most the limit in each of ${ROUNDS} windows, about one script call per block`, async () => {
    const before = await scriptCalls(nodes());
    const job = {
      target: target(),
      prefix: `leases:${name}:${Date.now()}:`,
      key: 'global',
      limit: LIMIT,
      units: UNITS,
      rounds: ROUNDS,
      perRound: PER_ROUND,
      consumers: 16,
      firstRound: 1,
    };
    const results = await contend(job);
    const calls = (await scriptCalls(nodes())) - before;
    for (let r = 0; r < ROUNDS; r++) {
      const admitted = results.reduce((sum, result) => sum + result.admitted[r]!, 0);
      expect(admitted).toBeLessThanOrEqual(LIMIT);
      // Under-admission: at most a block per process held unspent when its window ended.
      expect(admitted).toBeGreaterThanOrEqual(LIMIT - PROCESSES * UNITS);
    }
    // One call per block taken (20 blocks of 50 fill a window), per block denied and per request denied
    // alone, plus a process's first calls: within 4 × 20,000 / 50 + 10 per process.
    const failed = results.reduce((sum, result) => sum + result.failed, 0);
    // The figures are in the assertion's message: shown when it fails, not printed on a pass.
    const figures = `leases ${name}: ${calls} script calls for ${PROCESSES * ROUNDS * PER_ROUND} decisions (${failed} by the failure policy)`;
    expect(calls, figures).toBeLessThanOrEqual((PROCESSES * ROUNDS * PER_ROUND) / UNITS + 10 * PROCESSES);
  });

  it('a holder killed with SIGKILL: its spent unit stays spent, its block is lost to the others (at most the block), nothing over-admitted', async () => {
    const job = {
      target: target(),
      prefix: `leases:${name}:kill:${Date.now()}:`,
      key: 'global',
      limit: LIMIT,
      units: UNITS,
      rounds: 1,
      perRound: PER_ROUND,
      consumers: 16,
      firstRound: 7,
    };
    const holder = startWorker();
    try {
      await nextMessage<Message>(holder, (m) => m.started === true);
      const holding = nextMessage<Message>(holder, (m) => m.holding !== undefined);
      holder.send({ job: { ...job, mode: 'hold' } });
      expect((await holding).holding).toBe(true);
    } finally {
      holder.kill('SIGKILL');
    }
    const results = await contend(job);
    const admitted = results.reduce((sum, result) => sum + result.admitted[0]!, 0) + 1;
    expect(admitted).toBeLessThanOrEqual(LIMIT);
    expect(admitted).toBeGreaterThanOrEqual(LIMIT - (UNITS - 1) - PROCESSES * UNITS);
  });

  it(`holders killed with SIGKILL mid-traffic, a block in flight: the store charged each at most units (${UNITS}) more than it admitted`, async () => {
    const job = {
      target: target(),
      prefix: `leases:${name}:spend:${Date.now()}:`,
      limit: 10_000,
      units: UNITS,
      rounds: 1,
      firstRound: 11,
    };
    // Each stops after `perRound` decisions: one consumer stops right after a block was asked for (at 26, half a block spent) or after one came; 16 at any point.
    const holders = [
      { perRound: 26, consumers: 1 },
      { perRound: 51, consumers: 1 },
      { perRound: 76, consumers: 1 },
      { perRound: 100, consumers: 16 },
      { perRound: 333, consumers: 16 },
      { perRound: 999, consumers: 16 },
    ];
    const workers = holders.map(startWorker);
    let spent: number[];
    try {
      await workersStarted(workers);
      spent = await Promise.all(
        workers.map((w, i) => {
          const reply = nextMessage<Message>(w, (m) => m.spent !== undefined);
          w.send({ job: { ...job, ...holders[i], key: `holder-${i}`, mode: 'spend' } });
          return reply.then((m) => m.spent!);
        }),
      );
    } finally {
      for (const w of workers) w.kill('SIGKILL');
    }
    const client = 'url' in job.target ? new Redis(job.target.url) : new Cluster(job.target.nodes);
    try {
      const store = new RedisStore({ client, prefix: job.prefix });
      const reader = createLimiter({
        algorithm: fixedWindow({ limit: job.limit, window: '1h' }),
        store,
        clock: () => roundTime(job.firstRound),
        prefix: LIMIT_PREFIX,
        timeout: false,
      });
      const lost: number[] = [];
      for (let i = 0; i < holders.length; i++)
        lost.push(job.limit - (await reader.peek(`holder-${i}`)).remaining - spent[i]!);
      const figures = `leases ${name}: units lost by holders killed mid-traffic (the store's count less what each admitted): ${lost.join(', ')}`;
      expect(Math.max(...lost), figures).toBeLessThanOrEqual(UNITS);
      expect(Math.min(...lost), figures).toBeGreaterThanOrEqual(0);
    } finally {
      client.disconnect();
    }
  });
});
