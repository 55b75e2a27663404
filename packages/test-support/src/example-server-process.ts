/**
 * The test of every example's `src/server.ts` (`examples/<framework>/`), run in a child process: each
 * example's `src/server.test.ts` registers it for its own directory.
 */
import { spawn } from 'node:child_process';
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
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], { cwd: exampleDir, env, stdio: ['ignore', 'pipe', 'pipe'] });
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
    const code = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve('no exit in 10 s'), 10_000))]);
    expect(code, output).toBe(0);
    expect(output).toContain('closed');
    return output;
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
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
