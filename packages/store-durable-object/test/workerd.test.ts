/**
 * @rl/store-durable-object on workerd (through miniflare, installed privately; started on a free port
 * of 127.0.0.1 by each block and disposed of after it):
 * - the conformance suite, driven from Node through miniflare's Durable Object namespace: every call a
 *   subrequest to a real `RateLimitObject`, the state in workerd;
 * - two Worker instances (two scripts bound to one class) on one object admit exactly the limit;
 * - @rl/hono in a Worker with the store: the README's program runs;
 * - subrequests counted per request: a request's limits are one subrequest.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runStoreConformance } from '@rl/core/testing';
import { DurableObjectStore, type DurableObjectNamespaceLike } from '../src/index.js';
import {
  bundleWorker,
  importMiniflare,
  installWorkerd,
  LISTEN,
  WORKER_DEFAULTS,
  type MiniflareInstance,
} from './support/workerd.js';

const here = dirname(fileURLToPath(import.meta.url));
const unavailable = await installWorkerd();
const skipped = unavailable === undefined ? '' : ` (skipped: ${unavailable})`;
const suite = unavailable === undefined ? describe : describe.skip;
afterAll(() => {
  for (const file of README_FILES) rmSync(join(here, 'support', file), { force: true });
});

/** Starts a Miniflare of `options` before the block's tests, disposes of it after them. */
function useMiniflare(options: () => Promise<Record<string, unknown>>): () => MiniflareInstance {
  let mf: MiniflareInstance | undefined;
  beforeAll(async () => {
    const Miniflare = await importMiniflare();
    mf = new Miniflare({ ...LISTEN, ...(await options()) });
    await mf.ready;
  }, 60_000);
  afterAll(async () => {
    await mf?.dispose();
  });
  return () => mf!;
}

/**
 * A namespace in Node whose stubs reach the real objects in workerd: each fetch goes to the test
 * Worker (`/object/NAME`), which forwards it to the object of that name. (miniflare's own proxy,
 * `getDurableObjectNamespace`, answers its calls synchronously, one at a time: the suite's
 * concurrent calls mix its answers up.)
 */
function forwardingNamespace(mf: MiniflareInstance): DurableObjectNamespaceLike {
  return {
    idFromName: (name) => name,
    get: (id) => ({
      fetch: (_input, init) => mf.dispatchFetch(`http://rl.test/object/${encodeURIComponent(id as string)}`, init),
    }),
  };
}

/**
 * The options of a Worker running the program under `heading` in the README at `readme` (the first
 * ```ts block after it), written beside the tests as README_FILES[file] for esbuild, its binding
 * `RATE_LIMITER` as the READMEs name it.
 */
async function readmeWorker(readme: string, heading: string, file: number): Promise<Record<string, unknown>> {
  const text = readFileSync(readme, 'utf8');
  const program = /```ts\n([\s\S]*?)```/.exec(text.slice(text.indexOf(heading)))?.[1];
  if (program === undefined) throw new Error(`${readme}: no program under "${heading}"`);
  const path = join(here, 'support', README_FILES[file]!);
  writeFileSync(path, program);
  return {
    ...WORKER_DEFAULTS,
    modules: [{ type: 'ESModule', path: 'worker.mjs', contents: await bundleWorker(path) }],
    durableObjects: { RATE_LIMITER: 'RateLimitObject' },
  };
}

/** The files {@link readmeWorker} writes, removed after the run. */
const README_FILES = ['.package-readme.ts', '.root-readme.ts'];

const objectClass = { durableObjects: { RL: 'RateLimitObject' } };

suite(`on workerd${skipped}`, () => {
  // The seed's load tests make thousands of subrequests through miniflare: on a loaded machine more than the default 30 s.
  describe('the conformance suite, state in a RateLimitObject', { timeout: 90_000 }, () => {
    const mf = useMiniflare(async () => ({
      ...WORKER_DEFAULTS,
      script: await bundleWorker(join(here, 'support', 'limit-worker.ts')),
      ...objectClass,
    }));
    let stores = 0;
    runStoreConformance({
      name: 'DurableObjectStore (workerd)',
      // Every call is a subrequest from Node through miniflare (some 3 ms): 10 runs per property, not 100.
      propertyRuns: 10,
      // Each store its own objects: the state of one test is not the next one's.
      createStore: () =>
        new DurableObjectStore({ namespace: forwardingNamespace(mf()), name: `conformance-${++stores}` }),
      closeStore: (store) => (store as DurableObjectStore).close(),
    });
  });

  describe('@rl/hono in a Worker with the store', () => {
    const mf = useMiniflare(() => readmeWorker(join(here, '..', 'README.md'), '## A Worker with @rl/hono', 0));

    it("runs the README's program: 100 a minute per client, the 101st refused", async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 101; i++) {
        const res = await mf().dispatchFetch('http://app.test/', { headers: { 'cf-connecting-ip': '203.0.113.7' } });
        const text = await res.text();
        statuses.push(res.status);
        if (i === 0)
          expect([text, res.headers.get('ratelimit')?.split(';t=')[0]]).toEqual(['left: 99', '"100-in-1m";r=99']);
      }
      expect(statuses.filter((s) => s === 200)).toHaveLength(100);
      expect(statuses.at(-1)).toBe(429);
    });
  });

  describe("the root README's Worker (withRateLimit)", () => {
    const mf = useMiniflare(() =>
      readmeWorker(join(here, '..', '..', '..', 'README.md'), '## Cloudflare Workers: a Durable Object', 1),
    );

    it('answers, counting in the object', async () => {
      const res = await mf().dispatchFetch('http://app.test/', { headers: { 'cf-connecting-ip': '203.0.113.8' } });
      expect([res.status, await res.text(), res.headers.get('ratelimit')?.split(';t=')[0]]).toEqual([
        200,
        'hello',
        '"100-in-1m";r=99',
      ]);
    });
  });

  describe('subrequests per request', () => {
    const mf = useMiniflare(async () => ({
      ...WORKER_DEFAULTS,
      script: await bundleWorker(join(here, 'support', 'counted-hono-worker.ts')),
      ...objectClass,
    }));

    it.each(['/one', '/sharded'])(
      '%s: a request with two limits makes one subrequest, admitted or refused',
      async (path) => {
        const seen: [number, string | null][] = [];
        for (let i = 0; i < 4; i++) {
          const res = await mf().dispatchFetch(`http://app.test${path}`);
          await res.text();
          seen.push([res.status, res.headers.get('x-rl-subrequests')]);
        }
        expect(seen).toEqual([
          [200, '1'],
          [200, '1'],
          [200, '1'],
          [429, '1'],
        ]);
      },
    );
  });

  describe('two Worker instances on one object', () => {
    const mf = useMiniflare(async () => {
      const script = await bundleWorker(join(here, 'support', 'limit-worker.ts'));
      return {
        workers: [
          { ...WORKER_DEFAULTS, name: 'a', routes: ['a.test/*'], script, ...objectClass },
          {
            ...WORKER_DEFAULTS,
            name: 'b',
            routes: ['b.test/*'],
            script,
            durableObjects: { RL: { className: 'RateLimitObject', scriptName: 'a' } },
          },
        ],
      };
    });

    it('admit exactly the limit between them', async () => {
      const statuses = await Promise.all(
        Array.from({ length: 60 }, (_, i) =>
          mf()
            .dispatchFetch(`http://${i % 2 === 0 ? 'a' : 'b'}.test/charge?key=shared&limit=25`, { method: 'POST' })
            .then(async (res) => {
              const text = await res.text();
              if (res.status !== 200 && res.status !== 429) throw new Error(`${res.status}: ${text}`);
              return res.status;
            }),
        ),
      );
      expect(statuses.filter((s) => s === 200)).toHaveLength(25);
      expect(statuses.filter((s) => s === 429)).toHaveLength(35);
    });
  });
});
