/**
 * The tests of every example's app (`examples/<framework>/src/app.ts`), shared: each example's
 * `src/app.test.ts` registers them with the way its framework starts and closes the app.
 *
 * The app runs on an ephemeral port of 127.0.0.1 and is called with fetch. Its limits get a frozen
 * clock, so no token is refilled and no window ends during a test (no timing assumptions). Every test
 * runs on the memory store and on a real Redis (a redis-server of its own, or REDIS_URL).
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '@rl/core';
import { deferred } from './http-client.js';
import { startSharedRedis, type SharedRedis } from './redis-fixtures.js';

/** The options of `createApp` / `buildApp` the tests pass (the same in every example). */
export interface ExampleAppOptions {
  store?: Store;
  clock?: () => number;
  storeTimeout?: `${number}s`;
  slowWork?: () => Promise<void>;
}

/** An example app listening on 127.0.0.1. */
export interface OpenedApp {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** Drops its connections and stops listening. */
  close(): Promise<void>;
}

/** What an example's app module exports for its tests. */
export interface ExampleApp {
  /** The framework's name: `express`, `fastify`, `koa`, `hono`, `nestjs`. */
  name: string;
  /** The limits of the example (`LIMITS` of its `app.ts`). */
  limits: {
    readonly perIp: { readonly capacity: number };
    readonly perApiKey: { readonly limit: number };
    readonly exportCost: number;
    readonly slowConcurrency: number;
    readonly login: { readonly limit: number; readonly block: string };
  };
  /** The password POST /login accepts (`DEMO_PASSWORD` of its `app.ts`), sent in `x-password`. */
  password: string;
  /** The demo API keys (`API_KEYS` of its `app.ts`). */
  apiKeys: ReadonlySet<string>;
  /** Builds the app with `options` and listens on an ephemeral port of 127.0.0.1. */
  open(options: ExampleAppOptions): Promise<OpenedApp>;
  /** A RedisStore on `client` whose keys start with `prefix`. */
  redisStore(client: Redis, prefix: string): Store;
  /** The example's README: the commands of its "See a 429" section are run against the app (see {@link readmeDemo}). */
  readme?: URL;
}

/** The address the README's commands call; the test calls its own app instead. */
const README_ORIGIN = 'http://127.0.0.1:3000';

/** One request a README command sends. */
interface DemoRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
}

/** What the README shows of a response after a `curl -i`: `# HTTP/1.1 429 …` and `# Name: value` lines. */
interface Sample {
  readonly status?: number;
  readonly header?: readonly [name: string, value: string];
}

/** One command of the README's block, in order. */
type DemoCommand =
  /** `curl …` (the requests of its URL, `[1-25]` globbing expanded); `background`: it ended in `&`; `prints`: its statuses reach the terminal (`-w '%{http_code}\n'` or `-i`, not piped). */
  | {
      readonly kind: 'curl';
      readonly requests: readonly DemoRequest[];
      readonly background: boolean;
      readonly prints: boolean;
      readonly samples: Sample[];
    }
  | { readonly kind: 'sleep'; readonly seconds: number }
  | { readonly kind: 'wait' };

/** One line of the block: its commands, and the statuses its `#→` comment says it prints (in order). */
interface DemoLine {
  readonly text: string;
  readonly commands: readonly DemoCommand[];
  readonly expected: readonly number[] | undefined;
}

/** Splits a shell command into words: single and double quotes, no expansions (the README uses none). */
function shellWords(command: string): string[] {
  const words: string[] = [];
  const pattern = /'([^']*)'|"([^"]*)"|(\S+)/g;
  for (const match of command.matchAll(pattern)) words.push(match[1] ?? match[2] ?? match[3]!);
  return words;
}

/** `20 × 200, 5 × 429` (or `x`) as the list of statuses. */
function parseExpected(text: string, line: string): number[] {
  const statuses: number[] = [];
  for (const part of text.split(',')) {
    const match = /^\s*(?:(\d+)\s*[×x]\s*)?(\d{3})\s*$/.exec(part);
    if (!match) throw new Error(`README: cannot read the statuses "${text}" of: ${line}`);
    for (let i = 0; i < Number(match[1] ?? 1); i++) statuses.push(Number(match[2]));
  }
  return statuses;
}

/** A `curl` command of the README: its method, headers, URL (with curl's `[a-b]` globbing) and whether it prints statuses. */
function parseCurl(command: string, line: string): DemoCommand {
  const [pipeless, ...piped] = command.split('|');
  const words = shellWords(pipeless!);
  if (words[0] !== 'curl') throw new Error(`README: not a curl command: ${line}`);
  let method = 'GET';
  let url: string | undefined;
  let prints = false;
  const headers: Record<string, string> = {};
  for (let i = 1; i < words.length; i++) {
    const word = words[i]!;
    if (word === '-X') method = words[++i]!;
    else if (word === '-H') {
      const [name, ...value] = words[++i]!.split(':');
      headers[name!.trim().toLowerCase()] = value.join(':').trim();
    } else if (word === '-w') prints = words[++i] === '%{http_code}\\n' || prints;
    else if (word === '-o') i++;
    else if (word === '-i' || word === '-si') prints = true;
    else if (word === '-s') continue;
    else if (word.startsWith(README_ORIGIN)) url = word;
    else throw new Error(`README: unknown curl argument ${word} in: ${line}`);
  }
  if (url === undefined) throw new Error(`README: no ${README_ORIGIN} URL in: ${line}`);
  const glob = /\[(\d+)-(\d+)\]/.exec(url);
  const urls = glob
    ? Array.from({ length: Number(glob[2]) - Number(glob[1]) + 1 }, (_, i) =>
        url!.replace(glob[0], String(Number(glob[1]) + i)),
      )
    : [url];
  const requests = urls.map((u) => ({ method, path: u.slice(README_ORIGIN.length), headers }));
  return { kind: 'curl', requests, background: false, prints: prints && piped.length === 0, samples: [] };
}

/**
 * The commands of the README's "See a 429" block, line by line. A line's trailing `#→ <statuses>`
 * says what it prints; comment lines after a `curl -i` show its response (`# HTTP/1.1 429 …`,
 * `# Name: value`) and are checked too; other comment lines are prose. Anything else the reader would
 * paste (an unknown command or curl argument) fails the test, so the block cannot drift from it.
 */
export function readmeDemo(markdown: string): DemoLine[] {
  const section = /## See a 429\n(?:(?!## )[\s\S])*?```sh\n([\s\S]*?)```/.exec(markdown);
  if (!section) throw new Error('README: no "## See a 429" section with a ```sh block');
  const lines: DemoLine[] = [];
  let sampled: DemoCommand | undefined;
  for (const raw of section[1]!.split('\n')) {
    const text = raw.trim();
    if (text === '') {
      sampled = undefined;
      continue;
    }
    if (text.startsWith('#')) {
      if (sampled?.kind === 'curl') {
        const status = /^#\s*HTTP\/1\.1 (\d{3})\b/.exec(text);
        const header = /^#\s*([A-Za-z][A-Za-z0-9-]*): (.+)$/.exec(text);
        if (status) sampled.samples.push({ status: Number(status[1]) });
        else if (header) sampled.samples.push({ header: [header[1]!.toLowerCase(), header[2]!.trim()] });
        else sampled = undefined;
      }
      continue;
    }
    const [code, note] = text.split(/\s#→\s*/);
    const expected = note === undefined ? undefined : parseExpected(note, text);
    const commands: DemoCommand[] = [];
    // `a & b & c; d`: `&` ends a command sent to the background, `;` one that runs in the foreground.
    for (const piece of code!.split(/(?<=&)|;/)) {
      const command = piece.trim();
      if (command === '') continue;
      const background = command.endsWith('&');
      const body = background ? command.slice(0, -1).trim() : command;
      const sleep = /^sleep ([\d.]+)$/.exec(body);
      if (sleep) commands.push({ kind: 'sleep', seconds: Number(sleep[1]) });
      else if (body === 'wait') commands.push({ kind: 'wait' });
      // After a `curl -i`, ends the body's line.
      else if (body === 'echo') continue;
      else commands.push({ ...(parseCurl(body, text) as Extract<DemoCommand, { kind: 'curl' }>), background });
    }
    sampled = [...commands].reverse().find((c) => c.kind === 'curl');
    lines.push({ text, commands, expected });
  }
  return lines;
}

/** Listens with `app.listen(0, '127.0.0.1')` (Express and Koa apps alike); `close()` drops the connections. */
export async function listenOnFreePort(app: {
  listen(port: number, host: string, listening: () => void): Server;
}): Promise<OpenedApp> {
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** `r` of the RateLimit header: the units left. */
function remaining(res: Response): number {
  const match = /;\s*r=(\d+)/.exec(res.headers.get('ratelimit') ?? '');
  if (!match) throw new Error(`no r= in RateLimit: ${res.headers.get('ratelimit')}`);
  return Number(match[1]);
}

/** A 429 with the IETF headers, Retry-After and a problem+json body. */
async function expectDenied(res: Response, policy: string): Promise<void> {
  expect(res.status).toBe(429);
  expect(res.headers.get('ratelimit-policy')).toContain(`"${policy}";q=`);
  expect(res.headers.get('ratelimit-policy')).toMatch(/"[^"]+";q=\d+;w=\d+/);
  expect(res.headers.get('ratelimit')).toMatch(new RegExp(`"${policy}";r=0;t=\\d+`));
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const body = (await res.json()) as { status?: number };
  expect(body.status).toBe(429);
}

/** Registers the example app's tests, on the memory store and on Redis. */
export function describeExampleApp({
  name,
  limits: LIMITS,
  apiKeys: API_KEYS,
  password,
  open: openApp,
  redisStore: storeOn,
  readme,
}: ExampleApp): void {
  const opened: OpenedApp[] = [];
  let redis: SharedRedis | undefined;

  /** A RedisStore with a prefix of its own (a fresh state) on the shared test Redis, started on first use. */
  async function redisStore(): Promise<ExampleAppOptions['store']> {
    if (!redis) {
      redis = await startSharedRedis(`rl-example-${name}`);
      await redis.client.ping();
    }
    return storeOn(redis.client, `rl-example-${name}-${randomUUID()}:`);
  }

  afterAll(async () => {
    await redis?.stop();
  });

  let makeStore: () => Promise<ExampleAppOptions['store']>;

  async function start(options: ExampleAppOptions = {}): Promise<string> {
    const now = Date.now();
    const store = await makeStore();
    // A loaded test machine must not turn a slow Redis answer into a 503: wait up to 5 s.
    const app = await openApp({ clock: () => now, ...(store && { store, storeTimeout: '5s' }), ...options });
    opened.push(app);
    return app.url;
  }

  afterEach(async () => {
    for (const app of opened.splice(0)) await app.close();
  });

  describe.each([
    ['memory store', async () => undefined],
    ['Redis store', redisStore],
  ])(`${name} example on the %s`, (_name, factory) => {
    beforeEach(() => {
      makeStore = factory;
    });

    it('limits each IP with a token bucket of 20 and answers 429 with the RateLimit headers', async () => {
      const url = await start();
      const first = await fetch(`${url}/`);
      expect(first.status).toBe(200);
      expect(first.headers.get('ratelimit-policy')).toBe('"20-in-2s";q=20;w=2');
      expect(remaining(first)).toBe(LIMITS.perIp.capacity - 1);
      expect(await first.json()).toMatchObject({ hello: 'world', remaining: LIMITS.perIp.capacity - 1 });
      for (let i = 1; i < LIMITS.perIp.capacity; i++) expect((await fetch(`${url}/`)).status).toBe(200);
      await expectDenied(await fetch(`${url}/`), '20-in-2s');
    });

    it('charges 5 tokens for /export', async () => {
      const url = await start();
      const first = await fetch(`${url}/export`);
      expect(first.status).toBe(200);
      expect(remaining(first)).toBe(LIMITS.perIp.capacity - LIMITS.exportCost);
      for (let i = 2; i <= LIMITS.perIp.capacity / LIMITS.exportCost; i++)
        expect((await fetch(`${url}/export`)).status).toBe(200);
      await expectDenied(await fetch(`${url}/export`), '20-in-2s');
      // The per-IP bucket covers every route, also those with limits of their own.
      await expectDenied(await fetch(`${url}/api/items`, { headers: { 'x-api-key': [...API_KEYS][0]! } }), '20-in-2s');
      await expectDenied(await fetch(`${url}/slow`), '20-in-2s');
    });

    it('limits each API key to 10 requests a minute on /api', async () => {
      const url = await start();
      expect((await fetch(`${url}/api/items`)).status).toBe(401);
      const [alice, bob] = [...API_KEYS];
      for (let i = 0; i < LIMITS.perApiKey.limit; i++) {
        expect((await fetch(`${url}/api/items`, { headers: { 'x-api-key': alice! } })).status).toBe(200);
      }
      await expectDenied(await fetch(`${url}/api/items`, { headers: { 'x-api-key': alice! } }), '10-in-1m');
      // Another key from the same IP still passes.
      expect((await fetch(`${url}/api/items`, { headers: { 'x-api-key': bob! } })).status).toBe(200);
    });

    it('counts only failed logins, and blocks the IP for an hour at the limit', async () => {
      const url = await start();
      const login = (pw: string) => fetch(`${url}/login`, { method: 'POST', headers: { 'x-password': pw } });
      // Successful logins are given back: more of them than the limit all pass.
      for (let i = 0; i < LIMITS.login.limit + 3; i++) expect((await login(password)).status).toBe(200);
      for (let i = 0; i < LIMITS.login.limit; i++) expect((await login('guess')).status).toBe(401);
      const blocked = await login(password);
      expect(blocked.status).toBe(429);
      expect(blocked.headers.get('retry-after')).toBe('3600');
      expect((await login(password)).headers.get('retry-after')).toBe('3600');
    });

    it('serves the limits’ metrics on /metrics', async () => {
      const url = await start();
      for (let i = 0; i < 3; i++) expect((await fetch(`${url}/`)).status).toBe(200);
      const metrics = await (await fetch(`${url}/metrics`)).text();
      expect(metrics).toContain('rl_decisions_total{limit="20-in-2s",outcome="allowed"} 3');
      expect(metrics).toContain('rl_decisions_total{limit="20-in-2s",outcome="denied"} 0');
    });

    if (readme) {
      it('does what the README\'s "See a 429" commands say, pasted whole, in order', async () => {
        const demo = readmeDemo(readFileSync(readme, 'utf8'));
        // The README's `sleep` moves the limits' clock; /slow's work waits for the `wait` that follows it.
        let now = Date.now();
        const started = new Arrivals();
        let gate = deferred();
        const url = await start({
          clock: () => now,
          slowWork: () => {
            started.add();
            return gate.promise;
          },
        });
        const send = async (r: DemoRequest) => {
          const res = await fetch(`${url}${r.path}`, { method: r.method, headers: r.headers });
          await res.arrayBuffer();
          return res;
        };
        let background: Promise<Response>[] = [];
        for (const line of demo) {
          const printed: number[] = [];
          for (const command of line.commands) {
            if (command.kind === 'sleep') {
              now += command.seconds * 1000;
              // What the shell's sleep is for: the requests sent to the background have started.
              await started.reached(background.length);
            } else if (command.kind === 'wait') {
              gate.resolve();
              for (const res of await Promise.all(background)) printed.push(res.status);
              background = [];
              started.reset();
              gate = deferred();
            } else if (command.background) {
              background.push(...command.requests.map(send));
            } else {
              let last: Response | undefined;
              for (const request of command.requests) {
                last = await send(request);
                if (command.prints) printed.push(last.status);
              }
              for (const sample of command.samples) {
                if (sample.status !== undefined) expect(last!.status, line.text).toBe(sample.status);
                else
                  expect(last!.headers.get(sample.header![0]), `${sample.header![0]} after: ${line.text}`).toBe(
                    sample.header![1],
                  );
              }
            }
          }
          if (printed.length > 0 || line.expected !== undefined) expect(printed, line.text).toEqual(line.expected);
        }
        expect(background, 'every background request was waited for').toEqual([]);
      });
    }

    it('allows 2 requests to /slow in flight per IP', async () => {
      const started = new Arrivals();
      let open!: () => void;
      const gate = new Promise<void>((resolve) => (open = resolve));
      const url = await start({
        slowWork: () => {
          started.add();
          return gate;
        },
      });
      const inFlight = [fetch(`${url}/slow`), fetch(`${url}/slow`)];
      await started.reached(LIMITS.slowConcurrency);
      await expectDenied(await fetch(`${url}/slow`), `${LIMITS.slowConcurrency}-concurrent`);
      open();
      for (const res of await Promise.all(inFlight)) expect(res.status).toBe(200);
      // The permits came back when the responses ended.
      expect((await fetch(`${url}/slow`)).status).toBe(200);
    });
  });
}

/** Requests that reached a handler: `reached(n)` settles once `n` have (no polling). */
class Arrivals {
  private count = 0;
  private readonly waiting: { readonly n: number; readonly resolve: () => void }[] = [];

  add(): void {
    this.count++;
    for (const w of this.waiting.filter((x) => x.n <= this.count)) {
      this.waiting.splice(this.waiting.indexOf(w), 1);
      w.resolve();
    }
  }

  reached(n: number): Promise<void> {
    if (this.count >= n) return Promise.resolve();
    return new Promise((resolve) => this.waiting.push({ n, resolve }));
  }

  reset(): void {
    this.count = 0;
  }
}
