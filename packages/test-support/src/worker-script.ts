import { fork, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { build, type Plugin } from 'esbuild';
import { afterAll, beforeAll } from 'vitest';
import { workspaceEntryPoints } from '../workspace-aliases.mjs';

/**
 * A test's child-process script (a TypeScript module of the workspace) bundled into one JavaScript
 * file, with `@rl/*` resolved to the workspace's sources as vitest resolves them. A process started
 * from it loads one file: about 0.3 s of CPU where the TypeScript loader (register-ts.mjs, which
 * transforms every module in every process) took about 1 s, and the Redis suite starts some 150 such
 * processes. Its dependencies (ioredis, redis, …) are bundled too, so the file runs from anywhere, but for
 * a package with a native addon (Valkey GLIDE), imported by its absolute path.
 */
export interface WorkerScript {
  /** The bundled script's path (for `spawn(process.execPath, [path])`); valid once beforeAll has run. */
  readonly path: string;
  /** Forks a process of the script with an IPC channel for the test's messages, its stdout and stderr the test's own. */
  fork(): ChildProcess;
}

/** Lets the bundled ESM file's CommonJS dependencies `require` Node's built-ins. */
const REQUIRE_SHIM =
  "import { createRequire as rlCreateRequire } from 'node:module'; const require = rlCreateRequire(import.meta.url);";

/** Packages whose native addon esbuild cannot bundle (Valkey GLIDE's core). */
const NATIVE_PACKAGES = /^@valkey\/valkey-glide$/;

/** Bundles `modulePath` into the run's temporary directory in beforeAll and removes it in afterAll. */
export function useWorkerScript(modulePath: string): WorkerScript {
  let dir: string | undefined;
  let path: string | undefined;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rl-worker-'));
    path = join(dir, `${basename(modulePath, '.ts')}.mjs`);
    await bundle(modulePath, path);
  }, 60_000);
  afterAll(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });
  const script = (): string => {
    if (path === undefined) throw new Error('useWorkerScript: the script exists once beforeAll has run');
    return path;
  };
  return {
    get path() {
      return script();
    },
    fork: () => fork(script(), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  };
}

/**
 * The esbuild plugin that resolves `@rl/*` imports to the workspace's sources, as vitest resolves them
 * (a bundle of a test's script, for Node here or for workerd in @rl/store-durable-object's tests).
 */
export function workspaceSourcesPlugin(): Plugin {
  const sources = new Map(workspaceEntryPoints().map(({ specifier, source }) => [specifier, source]));
  return {
    name: 'rl-workspace-sources',
    setup(build) {
      build.onResolve({ filter: /^@rl\// }, ({ path }) => {
        const source = sources.get(path);
        return source === undefined ? undefined : { path: source };
      });
    },
  };
}

/** A package with a native addon (a `.node` file) cannot be bundled: imported from where it is installed. */
function installedNativePackages(): Plugin {
  return {
    name: 'rl-installed-native-packages',
    setup(build) {
      build.onResolve({ filter: NATIVE_PACKAGES }, ({ path, resolveDir }) => ({
        path: createRequire(join(resolveDir, 'index.js')).resolve(path),
        external: true,
      }));
    },
  };
}

async function bundle(entry: string, outfile: string): Promise<void> {
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    banner: { js: REQUIRE_SHIM },
    logLevel: 'error',
    plugins: [workspaceSourcesPlugin(), installedNativePackages()],
  });
}
