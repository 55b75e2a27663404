/**
 * The primary of node-cluster.test.ts: serves the cluster store to its workers and runs the job the
 * test names in argv[2], printing one line of JSON (its figures) on stdout, then exits.
 *
 * - `count`: 4 workers, each 10,000 decisions on one key (limit 1,000), 64 in flight.
 * - `kill`: a worker takes every permit of a concurrency limit and 5 units of a rate limit, and is
 *   killed with SIGKILL; a second worker then finds the permits held until their lease ends, and the
 *   units still taken.
 * - `two-holders`: two workers serve the store on one socket path at once: one listens, the other is
 *   refused (node:cluster shares a listening handle between workers unless it is exclusive).
 * - `two-stores`: a worker with two stores on its one IPC channel, a limit of 1,000 on one and 3 on
 *   the other, 10 requests through both.
 */
import cluster, { type Worker } from 'node:cluster';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serveClusterStore } from '../../src/index.js';

const server = serveClusterStore();
// The worker's script: its bundle, named by the test (RL_CLUSTER_WORKER).
cluster.setupPrimary({ exec: process.env.RL_CLUSTER_WORKER! });

/** Forks a worker for `job`; resolves to the figures it sends (the worker then exits when told). */
function start(
  job: string,
  env: Record<string, string> = {},
): { worker: Worker; figures: Promise<Record<string, unknown>> } {
  const worker = cluster.fork({ ...env, RL_CLUSTER_JOB: job });
  const figures = new Promise<Record<string, unknown>>((resolve, reject) => {
    worker.on('message', (message: { figures?: Record<string, unknown>; error?: string }) => {
      if (message.error !== undefined) reject(new Error(message.error));
      else if (message.figures !== undefined) resolve(message.figures);
    });
    worker.on('exit', (code, signal) => reject(new Error(`worker exited (${code ?? signal}) before its figures`)));
  });
  return { worker, figures };
}

function stop(worker: Worker): Promise<void> {
  return new Promise((resolve) => {
    if (worker.isDead()) return resolve();
    worker.once('exit', () => resolve());
    worker.send('exit');
  });
}

async function main(job: string): Promise<unknown> {
  if (job === 'count') {
    const workers = Array.from({ length: 4 }, () => start('count'));
    const figures = await Promise.all(workers.map((w) => w.figures));
    await Promise.all(workers.map((w) => stop(w.worker)));
    const sum = (field: string) => figures.reduce((total, f) => total + (f[field] as number), 0);
    return {
      admitted: sum('admitted'),
      decisions: sum('decisions'),
      notFromStore: sum('notFromStore'),
      messages: sum('messages'),
      holderMessages: server.counts.messages,
    };
  }
  if (job === 'kill') {
    const holder = start('hold');
    const held = await holder.figures;
    const killed = new Promise((resolve) => holder.worker.process.once('exit', resolve));
    holder.worker.process.kill('SIGKILL');
    await killed;
    const after = start('after');
    const figures = await after.figures;
    await stop(after.worker);
    return { ...held, ...figures };
  }
  if (job === 'two-holders') {
    const dir = mkdtempSync(join(tmpdir(), 'rl-two-holders-'));
    try {
      const holders = [0, 1].map(() => start('socket-holder', { RL_CLUSTER_SOCKET: join(dir, 'holder.sock') }));
      const figures = await Promise.all(holders.map((h) => h.figures));
      await Promise.all(holders.map((h) => stop(h.worker)));
      const listening = figures.filter((f) => f.listening === true).length;
      return { listening, refused: figures.filter((f) => f.code === 'EADDRINUSE').length };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  if (job === 'two-stores') {
    const one = start('two-stores');
    const figures = await one.figures;
    await stop(one.worker);
    return figures;
  }
  throw new Error(`unknown job ${job}`);
}

main(process.argv[2] ?? '').then(
  async (figures) => {
    process.stdout.write(JSON.stringify(figures) + '\n');
    await server.close();
  },
  async (error: unknown) => {
    process.stderr.write(`${String(error)}\n`);
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGKILL');
    await server.close();
    process.exitCode = 1;
  },
);
