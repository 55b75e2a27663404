// nestjs/throttler#1303: with a shared Redis storage, concurrent requests from several instances were
// admitted beyond the limit (a read, then a write). Here: two processes, each its own Nest app (one on
// Express, one on Fastify) on one Redis, each firing 500 concurrent requests of one client at a limit
// of 100 at the same moment: exactly 100 are admitted in all.
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { useRedis } from '@rl/test-support';
import type { BurstJob, BurstResult } from './support/burst-worker.js';

const redis = useRedis('rl-nestjs-1303');
const workerPath = fileURLToPath(new URL('./support/burst-worker.ts', import.meta.url));
const loader = fileURLToPath(new URL('./support/register-nest-loader.mjs', import.meta.url));

interface Message {
  started?: boolean;
  ready?: boolean;
  result?: BurstResult;
  error?: string;
}

const workers: ChildProcess[] = [];
afterEach(() => {
  for (const worker of workers.splice(0)) worker.kill('SIGKILL');
});

/** The next message of `worker` that `matches`; rejects on an error message or when the worker exits. */
function next(worker: ChildProcess, matches: (message: Message) => boolean): Promise<Message> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: Message) => {
      if (message.error !== undefined) done(() => reject(new Error(message.error)));
      else if (matches(message)) done(() => resolve(message));
    };
    const onExit = (code: number | null) => done(() => reject(new Error(`worker exited (code ${code})`)));
    const done = (settle: () => void) => {
      worker.off('message', onMessage);
      worker.off('exit', onExit);
      settle();
    };
    worker.on('message', onMessage);
    worker.once('exit', onExit);
  });
}

it('1,000 concurrent requests against a limit of 100 on Redis from 2 processes: exactly 100 admitted', async () => {
  const redisPrefix = redis.freshPrefix();
  const jobs: BurstJob[] = (['express', 'fastify'] as const).map((platform) => ({
    platform,
    redisUrl: redis.url,
    redisPrefix,
    limit: 100,
    requests: 500,
  }));
  for (const _job of jobs)
    workers.push(
      fork(workerPath, [], { execArgv: ['--import', loader], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
    );
  await Promise.all(workers.map((w) => next(w, (m) => m.started === true)));
  const ready = workers.map((w) => next(w, (m) => m.ready === true));
  workers.forEach((w, i) => w.send({ job: jobs[i] }));
  await Promise.all(ready);
  const results = workers.map((w) => next(w, (m) => m.result !== undefined));
  for (const w of workers) w.send('go');
  const [a, b] = (await Promise.all(results)).map((m) => m.result!);
  expect(a!.other).toEqual([]);
  expect(b!.other).toEqual([]);
  expect(a!.admitted + a!.denied).toBe(500);
  expect(b!.admitted + b!.denied).toBe(500);
  expect(a!.admitted + b!.admitted).toBe(100);
  // How the 100 split between the processes (a measurement, not asserted: either may win the race).
  console.log(`admitted: ${a!.admitted} (Express) + ${b!.admitted} (Fastify) = ${a!.admitted + b!.admitted}`);
}, 120_000);
