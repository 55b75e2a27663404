/**
 * The test of every example's `src/server.ts` (`examples/<framework>/`), run in a child process: each
 * example's `src/server.test.ts` registers it for its own directory.
 */
import { spawn } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedisServer, type RedisServerHandle } from './redis-server.js';

/**
 * Starts `src/server.ts` of `exampleDir` as `pnpm start` does (tsx, the built @rl/* packages) on a free
 * port of 127.0.0.1, bursts requests until a 429, checks its headers, then stops it with SIGTERM and
 * expects a clean exit. Bounded: 20 s to start, 10 bursts, 10 s to exit (60 s per test: the whole suite
 * may share the machine).
 */
async function startRequestUntil429AndStop(exampleDir: string, redisUrl?: string): Promise<string> {
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0', HOST: '127.0.0.1' };
  if (redisUrl) env.REDIS_URL = redisUrl;
  else delete env.REDIS_URL;
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    cwd: exampleDir,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`server did not start in 20 s:\n${output}`)), 20_000);
      child.stdout.on('data', () => {
        const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]!);
        }
      });
      void exited.then((code) => reject(new Error(`server exited with ${code}:\n${output}`)));
    });

    // Bursts of 30 concurrent requests against a bucket of 20: a 429 comes in the first burst
    // unless the machine is extremely slow; give up after 10 bursts.
    let denied: Response | undefined;
    for (let burst = 0; burst < 10 && !denied; burst++) {
      const responses = await Promise.all(Array.from({ length: 30 }, () => fetch(`${url}/`)));
      denied = responses.find((res) => res.status === 429);
      await Promise.all(responses.filter((res) => res !== denied).map((res) => res.arrayBuffer()));
    }
    expect(denied, `no 429 after 300 requests:\n${output}`).toBeDefined();
    expect(denied!.headers.get('ratelimit-policy')).toBe('"20-in-2s";q=20;w=2');
    expect(denied!.headers.get('ratelimit')).toMatch(/^"20-in-2s";r=0;t=\d+$/);
    expect(Number(denied!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(denied!.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(await denied!.json()).toMatchObject({ status: 429 });

    child.kill('SIGTERM');
    const code = await Promise.race([
      exited,
      new Promise((resolve) => setTimeout(() => resolve('no exit in 10 s'), 10_000)),
    ]);
    expect(code, output).toBe(0);
    expect(output).toContain('closed');
    return output;
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

/** `src/server.ts` of `exampleDir` in a child process with `env` added (tsx, as `pnpm start`), and its output so far. */
function startServer(exampleDir: string, env: NodeJS.ProcessEnv) {
  const full: NodeJS.ProcessEnv = { ...process.env, HOST: '127.0.0.1', ...env };
  if (env.REDIS_URL === undefined) delete full.REDIS_URL;
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    cwd: exampleDir,
    env: full,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const state = { output: '' };
  child.stdout.on('data', (chunk) => (state.output += chunk));
  child.stderr.on('data', (chunk) => (state.output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, state, exited };
}

/** A TCP port of 127.0.0.1 that something listens on while `body` runs. */
async function withBusyPort<T>(body: (port: number) => Promise<T>): Promise<T> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    return await body((server.address() as AddressInfo).port);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

/** A port of 127.0.0.1 that nothing listens on (taken, then given back). */
async function closedPort(): Promise<number> {
  return withBusyPort(async (port) => port);
}

/**
 * Registers the tests of `src/server.ts` for the example in `exampleDir` (a path, or a `file:` URL such
 * as `new URL('..', import.meta.url)` from the example's `src/`): memory store, then REDIS_URL set.
 */
export function describeServerProcess(exampleDir: string | URL): void {
  const dir = typeof exampleDir === 'string' ? exampleDir : fileURLToPath(exampleDir);

  describe('src/server.ts in a child process', () => {
    it('memory store: answers 429 with the RateLimit headers and shuts down on SIGTERM', async () => {
      expect(await startRequestUntil429AndStop(dir)).toContain('(store: memory)');
    }, 60_000);

    it('a port in use: says so (EADDRINUSE) and exits 1, without a stack trace', async () => {
      await withBusyPort(async (port) => {
        const { child, state, exited } = startServer(dir, { PORT: String(port) });
        try {
          const code = await Promise.race([
            exited,
            new Promise((resolve) => setTimeout(() => resolve('no exit in 20 s'), 20_000)),
          ]);
          expect(code, state.output).toBe(1);
          expect(state.output).toMatch(
            new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: EADDRINUSE: the port is in use`),
          );
          expect(state.output).not.toMatch(/TypeError|\n\s+at /);
        } finally {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        }
      });
    }, 60_000);

    it('REDIS_URL of a Redis that is not there: SIGTERM still shuts down cleanly (exit 0), not after the 5 s fallback (exit 1)', async () => {
      const { child, state, exited } = startServer(dir, {
        PORT: '0',
        REDIS_URL: `redis://127.0.0.1:${await closedPort()}`,
      });
      try {
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`server did not start in 20 s:\n${state.output}`)), 20_000);
          child.stdout.on('data', () => {
            if (/listening on http:\/\/127\.0\.0\.1:\d+/.test(state.output)) {
              clearTimeout(timer);
              resolve();
            }
          });
          void exited.then((code) => reject(new Error(`server exited with ${code}:\n${state.output}`)));
        });
        child.kill('SIGTERM');
        const code = await Promise.race([
          exited,
          new Promise((resolve) => setTimeout(() => resolve('no exit in 10 s'), 10_000)),
        ]);
        expect(code, state.output).toBe(0);
        expect(state.output).toContain('closed');
      } finally {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
    }, 60_000);

    describe('REDIS_URL set', () => {
      let redis: RedisServerHandle;
      beforeAll(async () => {
        redis = await startRedisServer();
      });
      afterAll(async () => {
        await redis?.stop();
      });

      it('Redis store: answers 429 with the RateLimit headers, closes the Redis client on SIGTERM', async () => {
        expect(await startRequestUntil429AndStop(dir, redis.url)).toContain('(store: redis)');
      }, 60_000);
    });
  });
}
