/**
 * The cluster store in a real node:cluster: a primary (test/support/cluster-primary.ts) serves it and
 * forks workers (each script bundled from the workspace's sources). Real processes and real time are the subject here.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { useWorkerScript } from '@rl/test-support';

// Each bundled once for the file (see useWorkerScript); the primary forks the worker's bundle.
const primary = useWorkerScript(fileURLToPath(new URL('./support/cluster-primary.ts', import.meta.url)));
const worker = useWorkerScript(fileURLToPath(new URL('./support/cluster-worker.ts', import.meta.url)));

/** Runs the primary with `job`; resolves to the figures it prints. Killed after `withinMs`. */
function runPrimary(job: string, withinMs: number): Promise<Record<string, number | boolean>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [primary.path, job], {
      env: { ...process.env, RL_CLUSTER_WORKER: worker.path },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), withinMs);
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(JSON.parse(stdout) as Record<string, number | boolean>);
      else reject(new Error(`primary ${job} exited with ${code ?? signal}: ${stderr}`));
    });
  });
}

describe('ClusterStore in node:cluster', () => {
  it('4 workers × 10,000 decisions on one key with a limit of 1,000: exactly 1,000 admitted, in at most one message per 10 decisions', async () => {
    const figures = await runPrimary('count', 50_000);
    expect(figures.decisions).toBe(40_000);
    expect(figures.notFromStore).toBe(0);
    expect(figures.admitted).toBe(1_000);
    // 64 in flight per worker: each turn's calls go as one message.
    expect(figures.messages).toBeLessThanOrEqual(40_000 / 10);
    expect(figures.holderMessages).toBe(figures.messages);
  }, 60_000);

  it('two stores in one worker share its IPC channel: each reads only the answers to its own calls', async () => {
    // Each numbers its calls from 1: read by the other store, the tight limit's answers were the roomy one's.
    expect(await runPrimary('two-stores', 30_000)).toEqual({ admittedRoomy: 10, admittedTight: 3 });
  }, 40_000);

  it('two workers serving the store on one socket path at once: one listens, the other is refused (EADDRINUSE)', async () => {
    expect(await runPrimary('two-holders', 30_000)).toEqual({ listening: 1, refused: 1 });
  }, 40_000);

  it('a worker killed with SIGKILL holding permits: they are free at their lease, and its charges stay', async () => {
    const figures = await runPrimary('kill', 30_000);
    expect(figures).toMatchObject({ held: 3, charged: true, deniedAtOnce: true, remaining: 5 });
    // The lease is 3 s from the acquire (one clock: one machine): freed then, not before, polled every 25 ms.
    const freedAfterMs = (figures.freedAt as number) - (figures.acquiredAt as number);
    expect(freedAfterMs).toBeGreaterThanOrEqual(2_900);
    expect(freedAfterMs).toBeLessThan(4_000);
  }, 40_000);
});
