/**
 * The test of every example's `src/server.ts` (`examples/<framework>/`), run in a child process: each
 * example's `src/server.test.ts` registers it for its own directory.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedisServer, type RedisServerHandle } from './redis-server.js';

/** How an example's server is started, in the example's folder: a runtime's binary and its arguments. */
export interface ServerCommand {
  /** What the errors call it ('the server', 'Bun: the example'). */
  readonly label: string;
  readonly binary: string;
  readonly args: readonly string[];
  /** How long it may take to listen, in ms (a loaded machine starts a runtime slowly). */
  readonly startWithinMs: number;
}

/** `src/server.ts` on Node with tsx, as `pnpm start` runs it (with the built @rl/* packages). */
const NODE_SERVER: ServerCommand = {
  label: 'the server',
  binary: process.execPath,
  args: ['--import', 'tsx', 'src/server.ts'],
  startWithinMs: 20_000,
};

/** A started server process: its output so far, and its exit code once it exits. */
interface ServerProcess {
  readonly child: ChildProcess;
  readonly state: { output: string };
  readonly exited: Promise<number | null>;
}

/** Starts `command` in `exampleDir` on 127.0.0.1 with `env` added (REDIS_URL unset unless `env` gives it). */
function startServer(exampleDir: string, command: ServerCommand, env: NodeJS.ProcessEnv): ServerProcess {
  const full: NodeJS.ProcessEnv = { ...process.env, HOST: '127.0.0.1', ...env };
  if (env.REDIS_URL === undefined) delete full.REDIS_URL;
  const child = spawn(command.binary, command.args, { cwd: exampleDir, env: full, stdio: ['ignore', 'pipe', 'pipe'] });
  const state = { output: '' };
  child.stdout!.on('data', (chunk) => (state.output += chunk));
  child.stderr!.on('data', (chunk) => (state.output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, state, exited };
}

/** The URL the server says it listens on; rejects when it exits first, or says nothing within `command.startWithinMs`. */
function listeningUrl({ child, state, exited }: ServerProcess, command: ServerCommand): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${command.label} did not start in ${command.startWithinMs / 1000} s:\n${state.output}`)),
      command.startWithinMs,
    );
    child.stdout!.on('data', () => {
      const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(state.output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    void exited.then((code) => reject(new Error(`${command.label} exited with ${code}:\n${state.output}`)));
  });
}

/** Its exit code once it exits, or `no exit in <s> s` when it has not within `withinMs`. */
function exitCode({ exited }: ServerProcess, withinMs: number): Promise<unknown> {
  return Promise.race([
    exited,
    new Promise((resolve) => setTimeout(() => resolve(`no exit in ${withinMs / 1000} s`), withinMs)),
  ]);
}

/** Kills the process if it is still running (the end of every test that started one). */
function killLeft({ child }: ServerProcess): void {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

/**
 * Starts the example in `exampleDir` with `command` on a free port of 127.0.0.1 (REDIS_URL set to
 * `redisUrl`, or unset), bursts requests until a 429, checks its headers, then sends SIGTERM: its exit
 * code (or `no exit in 10 s`) and its output. Bounded: the start, 10 bursts of 30, 10 s to exit.
 */
export async function serveUntil429AndStop(
  exampleDir: string,
  command: ServerCommand,
  redisUrl?: string,
): Promise<{ code: unknown; output: string }> {
  const server = startServer(exampleDir, command, { PORT: '0', ...(redisUrl ? { REDIS_URL: redisUrl } : {}) });
  try {
    const url = await listeningUrl(server, command);
    // Bursts of 30 concurrent requests against a bucket of 20: a 429 comes in the first burst
    // unless the machine is extremely slow; give up after 10 bursts.
    let denied: Response | undefined;
    for (let burst = 0; burst < 10 && !denied; burst++) {
      const responses = await Promise.all(Array.from({ length: 30 }, () => fetch(`${url}/`)));
      denied = responses.find((res) => res.status === 429);
      await Promise.all(responses.filter((res) => res !== denied).map((res) => res.arrayBuffer()));
    }
    expect(denied, `no 429 after 300 requests:\n${server.state.output}`).toBeDefined();
    expect(denied!.headers.get('ratelimit-policy')).toBe('"20-in-2s";q=20;w=2');
    expect(denied!.headers.get('ratelimit')).toMatch(/^"20-in-2s";r=0;t=\d+$/);
    expect(Number(denied!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(denied!.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(await denied!.json()).toMatchObject({ status: 429 });
    server.child.kill('SIGTERM');
    return { code: await exitCode(server, 10_000), output: server.state.output };
  } finally {
    killLeft(server);
  }
}

/**
 * `src/server.ts` of `exampleDir` as `pnpm start` runs it, until a 429 and its SIGTERM (see
 * {@link serveUntil429AndStop}): a clean exit (0, having said `closed`); its output. 60 s per test:
 * the whole suite may share the machine.
 */
async function startRequestUntil429AndStop(exampleDir: string, redisUrl?: string): Promise<string> {
  const { code, output } = await serveUntil429AndStop(exampleDir, NODE_SERVER, redisUrl);
  expect(code, output).toBe(0);
  expect(output).toContain('closed');
  return output;
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
        const server = startServer(dir, NODE_SERVER, { PORT: String(port) });
        try {
          expect(await exitCode(server, 20_000), server.state.output).toBe(1);
          expect(server.state.output).toMatch(
            new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: EADDRINUSE: the port is in use`),
          );
          expect(server.state.output).not.toMatch(/TypeError|\n\s+at /);
        } finally {
          killLeft(server);
        }
      });
    }, 60_000);

    it('REDIS_URL of a Redis that is not there: SIGTERM still shuts down cleanly (exit 0), not after the 5 s fallback (exit 1)', async () => {
      const server = startServer(dir, NODE_SERVER, { PORT: '0', REDIS_URL: `redis://127.0.0.1:${await closedPort()}` });
      try {
        await listeningUrl(server, NODE_SERVER);
        server.child.kill('SIGTERM');
        expect(await exitCode(server, 10_000), server.state.output).toBe(0);
        expect(server.state.output).toContain('closed');
      } finally {
        killLeft(server);
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
