/**
 * The cluster store under PM2 (from its npm package): a holder app in fork mode serving the store on
 * a socket, and an Express app in cluster mode with 4 instances whose `ClusterStore({ socket })`
 * reaches it. The daemon is this test's own (`PM2_HOME` in a temporary directory), killed and the
 * directory removed after. Skipped, with the reason, only when PM2 cannot start.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useWorkerScript } from '@rl/test-support';

const LIMIT = 100;
const REQUESTS = 300;
// Made when a test runs (a run that filters every test out runs no hook, and would leave it behind).
let home: string;
let socket: string;
beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), 'rl-pm2-'));
  socket = join(home, 'holder.sock');
});
// Bundled from the workspace's sources into one .mjs each: PM2 runs them as they are.
const holderScript = useWorkerScript(fileURLToPath(new URL('./support/pm2-holder.ts', import.meta.url)));
const appScript = useWorkerScript(fileURLToPath(new URL('./support/pm2-app.ts', import.meta.url)));

/** PM2's API as this test uses it, each call a promise. */
interface Pm2 {
  connect(cb: (error: Error | null) => void): void;
  start(options: object, cb: (error: Error | null) => void): void;
  restart(name: string, cb: (error: Error | null) => void): void;
  describe(name: string, cb: (error: Error | null, list: { pm2_env?: { status?: string } }[]) => void): void;
  delete(name: string, cb: (error: Error | null) => void): void;
  killDaemon(cb: (error: Error | null) => void): void;
  disconnect(): void;
}
let pm2: Pm2 | undefined;
const call = <T>(f: (cb: (error: Error | null, value?: T) => void) => void): Promise<T> =>
  new Promise((resolve, reject) => f((error, value) => (error ? reject(error) : resolve(value as T))));

afterAll(async () => {
  if (pm2 !== undefined) {
    await call((cb) => pm2!.delete('all', cb)).catch(() => {});
    await call((cb) => pm2!.killDaemon(cb)).catch(() => {});
    pm2.disconnect();
  }
  rmSync(home, { recursive: true, force: true });
}, 30_000);

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function waitFor(what: string, ok: () => Promise<boolean>, withinMs: number): Promise<void> {
  const end = Date.now() + withinMs;
  while (Date.now() < end) {
    if (await ok().catch(() => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${what}: not within ${withinMs} ms`);
}

describe('ClusterStore under PM2', () => {
  it('an Express app in cluster mode, 4 instances: exactly the limit admitted over HTTP; a restarted holder is reached again', async (context) => {
    process.env.PM2_HOME = join(home, 'pm2');
    try {
      pm2 = ((await import('pm2')) as unknown as { default: Pm2 }).default;
      await call((cb) => pm2!.connect(cb));
    } catch (error) {
      context.skip(`PM2 could not start its daemon: ${String(error)}`);
      return;
    }
    const port = await freePort();
    const common = { autorestart: true, env: { RL_SOCKET: socket } };
    await call((cb) =>
      pm2!.start(
        {
          ...common,
          name: 'rl-holder',
          script: holderScript.path,
          exec_mode: 'fork',
        },
        cb,
      ),
    );
    await call((cb) =>
      pm2!.start(
        {
          ...common,
          name: 'rl-app',
          script: appScript.path,
          exec_mode: 'cluster',
          instances: 4,
          env: { ...common.env, PORT: String(port), RL_LIMIT: String(LIMIT) },
        },
        cb,
      ),
    );
    const url = `http://127.0.0.1:${port}`;
    await waitFor(
      'four instances online',
      async () => {
        const list = await call<{ pm2_env?: { status?: string } }[]>((cb) => pm2!.describe('rl-app', cb));
        return list.filter((p) => p.pm2_env?.status === 'online').length === 4 && (await fetch(`${url}/health`)).ok;
      },
      30_000,
    );

    // Requests 16 at a time, spread over the instances by PM2's cluster: exactly the limit admitted.
    const statuses: number[] = [];
    const pids = new Set<number>();
    let sent = 0;
    const lane = async (): Promise<void> => {
      while (sent < REQUESTS) {
        sent++;
        const response = await fetch(url);
        statuses.push(response.status);
        if (response.ok) pids.add(((await response.json()) as { pid: number }).pid);
        else await response.arrayBuffer();
      }
    };
    await Promise.all(Array.from({ length: 16 }, lane));
    expect(statuses.filter((s) => s === 200)).toHaveLength(LIMIT);
    expect(statuses.filter((s) => s === 429)).toHaveLength(REQUESTS - LIMIT);
    expect(pids.size).toBeGreaterThan(1);

    // The holder restarts (its state is new): the instances reach it again by themselves.
    await call((cb) => pm2!.restart('rl-holder', cb));
    await waitFor('a request admitted by the restarted holder', async () => (await fetch(url)).status === 200, 15_000);
  }, 60_000);
});
