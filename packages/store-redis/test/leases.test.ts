/**
 * Quota leases across processes (`lease: { units: 50 }`), with the defaults users get (batching, the
 * deny cache, the timeout, ioredis's options): 4 processes × 20,000 decisions on one hot key, on a
 * standalone Redis and on a Cluster (one global key: the hot-slot case). Each round is a window of
 * its own: in none may more than the limit be admitted, whichever process admitted it, and the script
 * calls Redis ran (INFO commandstats) stay within one per block. A holder killed with SIGKILL costs
 * the others at most its block and never causes over-admission.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedisCluster, startRedisServer, tsLoaderRegistration, type RedisClusterHandle, type RedisServerHandle } from '@rl/test-support';
import { Redis } from 'ioredis';
import type { LeaseJob, LeaseResult } from './support/lease-worker.js';
import { nextMessage, type WorkerMessage } from './support/worker-ipc.js';

const PROCESSES = 4;
const ROUNDS = 20;
const PER_ROUND = 1000;
const LIMIT = 1000;
const UNITS = 50;
const workerPath = fileURLToPath(new URL('./support/lease-worker.ts', import.meta.url));

let server: RedisServerHandle;
let cluster: RedisClusterHandle;

beforeAll(async () => {
  [server, cluster] = await Promise.all([startRedisServer(), startRedisCluster()]);
});

afterAll(async () => {
  await Promise.all([server?.stop(), cluster?.stop()]);
});

interface Message extends WorkerMessage {
  holding?: boolean;
  result?: LeaseResult;
}

function startWorker(): ChildProcess {
  return fork(workerPath, [], { execArgv: ['--import', tsLoaderRegistration], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
}


/** Script calls (EVALSHA and EVAL) the masters have run so far. */
async function scriptCalls(nodes: readonly { host: string; port: number }[]): Promise<number> {
  let calls = 0;
  for (const node of nodes) {
    const client = new Redis(node.port, node.host);
    const info = await client.info('commandstats');
    for (const command of ['evalsha', 'eval']) calls += Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(info)?.[1] ?? 0);
    client.disconnect();
  }
  return calls;
}

/** Runs `job` in `count` fresh processes released together; their results. */
async function contend(job: Omit<LeaseJob, 'mode'>, count = PROCESSES): Promise<LeaseResult[]> {
  const workers = Array.from({ length: count }, startWorker);
  try {
    await Promise.all(workers.map((w) => nextMessage<Message>(w, (m) => m.started === true)));
    const ready = workers.map((w) => nextMessage<Message>(w, (m) => m.ready === true));
    for (const w of workers) w.send({ job: { ...job, mode: 'rounds' } });
    await Promise.all(ready);
    const results = workers.map((w) => nextMessage<Message>(w, (m) => m.result !== undefined));
    for (const w of workers) w.send('go');
    return (await Promise.all(results)).map((m) => m.result!);
  } finally {
    for (const w of workers) w.kill('SIGKILL');
  }
}

describe.each([
  { name: 'standalone', target: () => ({ url: server.url }), nodes: () => [{ host: '127.0.0.1', port: server.port }] },
  { name: 'cluster', target: () => ({ nodes: cluster.nodes }), nodes: () => cluster.nodes },
])('quota leases on $name Redis', ({ name, target, nodes }) => {
  it(`${PROCESSES} processes × ${ROUNDS * PER_ROUND} decisions on one hot key, units ${UNITS}: at most the limit in each of ${ROUNDS} windows, about one script call per block`, async () => {
    const before = await scriptCalls(nodes());
    const job = { target: target(), prefix: `leases:${name}:${Date.now()}:`, key: 'global', limit: LIMIT, units: UNITS, rounds: ROUNDS, perRound: PER_ROUND, consumers: 16, firstRound: 1 };
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
    process.stdout.write(`leases ${name}: ${calls} script calls for ${PROCESSES * ROUNDS * PER_ROUND} decisions\n`);
    expect(calls).toBeLessThanOrEqual((PROCESSES * ROUNDS * PER_ROUND) / UNITS + 10 * PROCESSES);
  });

  it('a holder killed with SIGKILL: its spent unit stays spent, its block is lost to the others (at most the block), nothing over-admitted', async () => {
    const job = { target: target(), prefix: `leases:${name}:kill:${Date.now()}:`, key: 'global', limit: LIMIT, units: UNITS, rounds: 1, perRound: PER_ROUND, consumers: 16, firstRound: 7 };
    const holder = startWorker();
    await nextMessage<Message>(holder, (m) => m.started === true);
    const holding = nextMessage<Message>(holder, (m) => m.holding !== undefined);
    holder.send({ job: { ...job, mode: 'hold' } });
    expect((await holding).holding).toBe(true);
    holder.kill('SIGKILL');
    const results = await contend(job);
    const admitted = results.reduce((sum, result) => sum + result.admitted[0]!, 0) + 1;
    expect(admitted).toBeLessThanOrEqual(LIMIT);
    expect(admitted).toBeGreaterThanOrEqual(LIMIT - (UNITS - 1) - PROCESSES * UNITS);
  });
});
