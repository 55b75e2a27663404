/**
 * The smoke suite on the runtimes the Fetch adapter is for: Bun, Deno (both from their npm packages)
 * and workerd (Cloudflare Workers' runtime, through miniflare), each running the built @rl/hono,
 * @rl/core and @rl/store-memory bundled with the app in test/smoke-app.ts. The same requests on each:
 * headers and the 429, a cost, a held request, a client that leaves. The runtimes are installed on the
 * first run (test/smoke-runtimes.ts); the suite is skipped, saying why, when they cannot be.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { canListProcesses, processesWith, request, startRequest } from '@rl/test-support';
import { importMiniflare, installSmokeRuntimes, RUNTIME_BINARIES } from './smoke-runtimes.js';

const here = dirname(fileURLToPath(import.meta.url));

interface Runtime {
  readonly name: string;
  /** Why this runtime cannot show a client's leaving to the worker, when it cannot. */
  readonly noDisconnect?: string;
  /** The entry around `createApp()` for this runtime. */
  readonly entry: string;
  /** Starts the bundle; resolves its base URL. */
  start(bundle: string): Promise<{ url: string; stop(): Promise<void> }>;
}

/**
 * Starts `command` in a process group of its own and resolves the URL of the `PORT <n>` line it
 * prints. Bun's and Deno's npm packages start the runtime behind a launcher (a shell script, a Node
 * script): stopping kills the whole group, the runtime with its launcher, and resolves once the
 * launcher is gone (the same SIGKILL reached the runtime).
 */
function serveProcess(command: string, args: readonly string[]): Promise<{ url: string; stop(): Promise<void> }> {
  const child: ChildProcess = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  let output = '';
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      const port = /PORT (\d+)/.exec(output)?.[1];
      if (port === undefined) return;
      child.stdout!.off('data', onData);
      resolve({
        url: `http://127.0.0.1:${port}`,
        async stop() {
          try {
            process.kill(-child.pid!, 'SIGKILL');
          } catch {
            // the group is gone already
          }
          await exited;
        },
      });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => reject(new Error(`${command} exited (${code}) before listening:\n${output}`)));
    child.once('error', reject);
  });
}

const runtimes: Runtime[] = [
  {
    name: 'Bun',
    entry:
      "import { createApp } from './smoke-app'; const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: createApp().fetch }); console.log(`PORT ${server.port}`);",
    start: (bundle) => serveProcess(RUNTIME_BINARIES.bunLauncher, ['run', bundle]),
  },
  {
    name: 'Deno',
    entry:
      "import { createApp } from './smoke-app'; Deno.serve({ port: 0, hostname: '127.0.0.1', onListen: ({ port }) => console.log(`PORT ${port}`) }, createApp().fetch);",
    start: (bundle) => serveProcess(RUNTIME_BINARIES.denoLauncher, ['run', '--allow-net', '--no-prompt', bundle]),
  },
  {
    name: 'workerd (Cloudflare Workers, through miniflare)',
    // workerd aborts request.signal on a disconnect (compatibility flag enable_request_signal), but
    // miniflare's HTTP server does not pass the client's leaving on to workerd (cloudflare/workers-sdk#9368).
    noDisconnect:
      "miniflare's HTTP server does not forward a client's disconnect to workerd (cloudflare/workers-sdk#9368)",
    entry:
      "import { createApp } from './smoke-app'; const app = createApp(); export default { fetch: (request, env, ctx) => app.fetch(request, env, ctx) };",
    async start(bundle) {
      const { Miniflare } = await importMiniflare();
      const mf = new Miniflare({
        modules: true,
        script: readFileSync(bundle, 'utf8'),
        host: '127.0.0.1',
        port: 0,
        compatibilityDate: '2025-01-01',
        compatibilityFlags: ['enable_request_signal'],
      });
      const url = (await mf.ready).toString().replace(/\/$/, '');
      return { url, stop: () => mf.dispose() };
    },
  },
];

/** Why the runtimes are not there (they could not be installed), or undefined. */
const unavailable = await installSmokeRuntimes();
const suite = unavailable === undefined ? describe : describe.skip;

// Where the bundles go: made only when the suite runs (a file whose tests are all skipped runs no afterAll).
const scratch = unavailable === undefined ? mkdtempSync(join(tmpdir(), 'rl-hono-runtimes-')) : tmpdir();
afterAll(() => {
  if (unavailable === undefined) rmSync(scratch, { recursive: true, force: true });
});

/** The variable whose value marks the processes of one runtime under test. */
const RUNTIME_MARK = 'RL_SMOKE_RUNTIME';

suite.each(runtimes)(`on $name${unavailable === undefined ? '' : ` (skipped: ${unavailable})`}`, (runtime) => {
  let server: { url: string; stop(): Promise<void> } | undefined;
  const mark = randomUUID();
  /** Stops the runtime (once: the last test stops it, afterAll makes sure). */
  const stopOnce = async (): Promise<void> => {
    const stopping = server;
    server = undefined;
    await stopping?.stop();
  };

  beforeAll(async () => {
    const bundle = join(scratch, `${runtime.name.split(' ')[0]!.toLowerCase()}.mjs`);
    const result = await build({
      stdin: { contents: runtime.entry, resolveDir: here, loader: 'ts' },
      bundle: true,
      format: 'esm',
      platform: 'neutral',
      mainFields: ['module', 'main'],
      conditions: ['import', 'default'],
      // The package under test, as built (its own name does not resolve from inside it).
      alias: { '@rl/hono': join(here, '..', 'dist', 'index.js') },
      write: false,
      logLevel: 'silent',
    });
    writeFileSync(bundle, result.outputFiles[0]!.text);
    // Every process the runtime starts carries the mark (spawned with this environment): the last test
    // finds them by it once stopped.
    vi.stubEnv(RUNTIME_MARK, mark);
    try {
      server = await runtime.start(bundle);
    } finally {
      vi.unstubAllEnvs();
    }
  }, 60_000);

  afterAll(async () => {
    await stopOnce();
  });

  it('sends the RateLimit headers, then a 429 problem with Retry-After', async () => {
    const first = await request(server!.url, '/limited');
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ remaining: 1 });
    expect(first.headers['ratelimit-policy']).toBe('"2-in-1m";q=2;w=60');
    expect(first.headers.ratelimit).toMatch(/^"2-in-1m";r=1;t=\d+$/);
    expect((await request(server!.url, '/limited')).status).toBe(200);
    const denied = await request(server!.url, '/limited');
    expect(denied.status).toBe(429);
    expect(denied.headers['content-type']).toBe('application/problem+json');
    expect(Number(denied.headers['retry-after'])).toBeGreaterThan(0);
    expect(denied.headers.ratelimit).toMatch(/^"2-in-1m";r=0;t=\d+$/);
  });

  it('charges a request its cost', async () => {
    expect((await request(server!.url, '/cost?n=7')).body).toEqual({ remaining: 3 });
    expect((await request(server!.url, '/cost?n=4')).status).toBe(429);
    expect((await request(server!.url, '/cost?n=3')).body).toEqual({ remaining: 0 });
  });

  it('holds a shaped request for its slot', async () => {
    const started = performance.now();
    const [a, b] = await Promise.all([request(server!.url, '/held'), request(server!.url, '/held')]);
    const delays = [(a.body as { delayMs: number }).delayMs, (b.body as { delayMs: number }).delayMs].sort(
      (x, y) => x - y,
    );
    expect(delays[0]).toBe(0);
    expect(delays[1]).toBeGreaterThan(250);
    // Held, not only told: the later answer came no sooner than its delay.
    expect(performance.now() - started).toBeGreaterThanOrEqual(delays[1]! - 5);
  });

  it.skipIf(runtime.noDisconnect !== undefined)(
    `releases a concurrency permit when the handler of a client that left answers${runtime.noDisconnect === undefined ? '' : ` (skipped: ${runtime.noDisconnect})`}`,
    async () => {
      const hanging = startRequest(server!.url, '/hang');
      hanging.on('error', () => {});
      await vi.waitFor(async () => expect((await request(server!.url, '/permit')).status).toBe(429));
      hanging.destroy();
      await vi.waitFor(async () => expect((await request(server!.url, '/permit')).status).toBe(200), {
        timeout: 5_000,
      });
    },
  );

  it('limits a plain Fetch handler (withRateLimit)', async () => {
    expect((await request(server!.url, '/plain')).body).toEqual({ remaining: 0 });
    expect((await request(server!.url, '/plain')).status).toBe(429);
  });

  // Last: it stops the server. Before the fix, stopping killed Bun's and Deno's launchers only, and
  // each run left both runtimes serving.
  it('stops whole: no process it started is left', async ({ skip }) => {
    skip(!canListProcesses(), 'listing processes with their environment needs /proc');
    expect(processesWith(RUNTIME_MARK, mark).length).toBeGreaterThan(0);
    await stopOnce();
    await vi.waitFor(() => expect(processesWith(RUNTIME_MARK, mark)).toEqual([]), { timeout: 5_000 });
  });
});
