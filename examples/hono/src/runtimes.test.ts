/**
 * The example on Bun (`src/bun.ts`) and Deno (`src/deno.ts`), started as its README says, with the
 * runtimes that @rl/hono's runtime smoke suite installs (packages/hono's devDependencies `bun` and
 * `deno`: their binaries, not their launchers, so a signal reaches the runtime). Each answers 429 with
 * the RateLimit headers (memory store, then Redis) and exits 0 on SIGTERM. The app itself is tested
 * on Node (app.test.ts, server.test.ts): this checks that the same files start on the other runtimes.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedisServer, type RedisServerHandle } from '@rl/test-support';

const exampleDir = fileURLToPath(new URL('..', import.meta.url));
const hono = fileURLToPath(new URL('../../../packages/hono/node_modules/', import.meta.url));

interface Runtime {
  readonly name: string;
  /** The runtime's binary. */
  readonly binary: string;
  /** Its arguments, as the README gives them. */
  readonly args: readonly string[];
}

const runtimes: Runtime[] = [
  { name: 'Bun', binary: `${hono}bun/bin/bun.exe`, args: ['src/bun.ts'] },
  { name: 'Deno', binary: `${hono}deno/deno`, args: ['run', '--allow-net', '--allow-env', 'src/deno.ts'] },
];

/**
 * Starts the example on `runtime` on a free port of 127.0.0.1, bursts requests until a 429 (at most 10
 * bursts of 30), checks its headers, then sends SIGTERM and returns the exit code and the output.
 */
async function serveUntil429AndStop(runtime: Runtime, redisUrl?: string): Promise<{ code: unknown; output: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0', HOST: '127.0.0.1' };
  if (redisUrl) env.REDIS_URL = redisUrl;
  else delete env.REDIS_URL;
  const child = spawn(runtime.binary, runtime.args, { cwd: exampleDir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${runtime.name}: the example did not start in 30 s:\n${output}`)),
        30_000,
      );
      child.stdout.on('data', () => {
        const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]!);
        }
      });
      void exited.then((code) => reject(new Error(`${runtime.name}: the example exited with ${code}:\n${output}`)));
    });

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
    return { code, output };
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

describe.each(runtimes)('the example on $name', (runtime) => {
  const installed = existsSync(runtime.binary);
  const skipped = installed
    ? ''
    : ` (skipped: ${runtime.binary} is missing: the runtime comes with packages/hono's devDependencies)`;

  let redis: RedisServerHandle | undefined;
  beforeAll(async () => {
    if (installed) redis = await startRedisServer();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it.skipIf(!installed)(
    `memory store: answers 429 with the RateLimit headers and exits 0 on SIGTERM${skipped}`,
    async () => {
      const { code, output } = await serveUntil429AndStop(runtime);
      expect(code, output).toBe(0);
      expect(output).toContain(`(${runtime.name}) listening on`);
      expect(output).toContain('(store: memory)');
      expect(output).toContain('closed');
    },
    60_000,
  );

  it.skipIf(!installed)(
    `REDIS_URL set: answers 429 on Redis and closes the client on SIGTERM${skipped}`,
    async () => {
      const { code, output } = await serveUntil429AndStop(runtime, redis!.url);
      expect(code, output).toBe(0);
      expect(output).toContain('(store: redis)');
      expect(output).toContain('closed');
    },
    60_000,
  );
});
