/**
 * workerd for the tests, through miniflare: installed privately into packages/hono/runtimes (the
 * runtime smoke suite's folder, one install per clone for both suites; not in the workspace install:
 * docs/design/testing.md, "The runtimes of the smoke suite"), and Worker scripts bundled with esbuild
 * from the workspace's sources (`@rl/*` as vitest resolves them), for workerd (platform neutral).
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { installPrivate, workspaceSourcesPlugin } from '@rl/test-support';

const RUNTIMES_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'hono', 'runtimes');

/** Installs miniflare (and workerd) unless an earlier run did: undefined when there, or why not (a skip reason). */
export function installWorkerd(): Promise<string | undefined> {
  return installPrivate({ dir: RUNTIMES_DIR, label: 'workerd through miniflare (packages/hono/runtimes)' });
}

/** What the tests use of a Miniflare (its types are not installed where tsc and eslint look). */
export interface MiniflareInstance {
  ready: Promise<URL>;
  dispatchFetch(url: string, init?: Record<string, unknown>): Promise<Response>;
  getDurableObjectNamespace(binding: string, workerName?: string): Promise<unknown>;
  dispose(): Promise<void>;
}

/** miniflare's constructor, from the runtimes' folder (after {@link installWorkerd}). */
export async function importMiniflare(): Promise<new (options: Record<string, unknown>) => MiniflareInstance> {
  const path = createRequire(join(RUNTIMES_DIR, 'package.json')).resolve('miniflare');
  return (
    (await import(pathToFileURL(path).href)) as {
      Miniflare: new (options: Record<string, unknown>) => MiniflareInstance;
    }
  ).Miniflare;
}

/** The Worker module at `entry` (a TypeScript file) bundled into one ES module's text. */
export async function bundleWorker(entry: string): Promise<string> {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    mainFields: ['module', 'main'],
    conditions: ['import', 'default'],
    target: 'es2022',
    write: false,
    logLevel: 'error',
    plugins: [workspaceSourcesPlugin()],
  });
  return result.outputFiles[0]!.text;
}

/** The options of every test Worker: an ES module, on the first compatibility date with `WeakRef` (the stores hold their listeners weakly). */
export const WORKER_DEFAULTS = { modules: true, compatibilityDate: '2025-05-05' } as const;

/** Where miniflare listens: a free port of 127.0.0.1 only. */
export const LISTEN = { host: '127.0.0.1', port: 0 } as const;
