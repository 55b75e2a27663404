/**
 * Where the runtime smoke suite's runtimes are: Bun, Deno and workerd (through miniflare), pinned in
 * runtimes/package.json and installed into runtimes/node_modules on the first run that needs them
 * (not by the workspace's `pnpm install`: docs/design/testing.md, "The runtimes of the smoke suite").
 * examples/hono's runtime test runs the example on the same Bun and Deno.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { installPrivate } from '@rl/test-support';

/** The folder: its own package.json and pnpm-lock.yaml, no workspace project. */
export const RUNTIMES_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'runtimes');

const modules = join(RUNTIMES_DIR, 'node_modules');

/** The binaries: the npm packages' launchers (`.bin`), and the runtimes they start. */
export const RUNTIME_BINARIES = {
  bunLauncher: join(modules, '.bin', 'bun'),
  denoLauncher: join(modules, '.bin', 'deno'),
  bun: join(modules, 'bun', 'bin', 'bun.exe'),
  deno: join(modules, 'deno', 'deno'),
} as const;

/**
 * Installs the runtimes unless an earlier run did (once per clone; concurrent files wait for one
 * install): resolves undefined when they are there, or why they are not (a skip reason).
 */
export function installSmokeRuntimes(): Promise<string | undefined> {
  return installPrivate({ dir: RUNTIMES_DIR, label: 'Bun, Deno and workerd (packages/hono/runtimes)' });
}

/** What the suite uses of miniflare (its types are not installed where tsc and eslint look). */
export interface MiniflareModule {
  Miniflare: new (options: Record<string, unknown>) => { ready: Promise<URL>; dispose(): Promise<void> };
}

/** miniflare, from the runtimes' folder (after {@link installSmokeRuntimes}). */
export async function importMiniflare(): Promise<MiniflareModule> {
  const path = createRequire(join(RUNTIMES_DIR, 'package.json')).resolve('miniflare');
  return (await import(pathToFileURL(path).href)) as MiniflareModule;
}
