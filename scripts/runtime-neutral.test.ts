/**
 * What a Fetch adapter loads runs on any JavaScript runtime (Bun, Deno, Cloudflare Workers, a
 * browser): `@rl/core` (its root, its `http`, `store` and `simulation` kits), `@rl/store-memory`, `@rl/hono`, `@rl/client`,
 * `@rl/store-durable-object` and the cluster store's `remote` entry it loads import no
 * `node:` module, directly or through their dependencies. Checked on the built files, as users get
 * them: each entry bundled for a runtime-neutral platform, where an import of a Node built-in cannot
 * be resolved.
 */
import { build } from 'esbuild';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const packagesDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'packages');

const ENTRIES = {
  '@rl/core': join(packagesDir, 'core', 'dist', 'index.js'),
  '@rl/core/http': join(packagesDir, 'core', 'dist', 'http', 'index.js'),
  '@rl/core/store': join(packagesDir, 'core', 'dist', 'store', 'index.js'),
  // Virtual time (a client's or a limiter's tests on a Worker) and the simulator's models.
  '@rl/core/simulation': join(packagesDir, 'core', 'dist', 'simulation', 'index.js'),
  '@rl/store-memory': join(packagesDir, 'store-memory', 'dist', 'index.js'),
  // The Fetch adapter itself (Hono is a peer: left out of the bundle, as the runtime's app brings it).
  '@rl/hono': join(packagesDir, 'hono', 'dist', 'index.js'),
  // The caller's side: a fetch for any runtime (its structured-field parser bundled with it).
  '@rl/client': join(packagesDir, 'client', 'dist', 'index.js'),
  // A Worker's store and its Durable Object, through the cluster store's transport-free entry.
  '@rl/store-cluster/remote': join(packagesDir, 'store-cluster', 'dist', 'remote.js'),
  '@rl/store-durable-object': join(packagesDir, 'store-durable-object', 'dist', 'index.js'),
};

describe('the code a Fetch adapter loads', () => {
  for (const [name, entry] of Object.entries(ENTRIES)) {
    it(`${name} imports no node: module (bundled for a neutral platform from its built files)`, async () => {
      const result = await build({
        entryPoints: [entry],
        bundle: true,
        write: false,
        metafile: true,
        platform: 'neutral',
        format: 'esm',
        mainFields: ['module', 'main'],
        conditions: ['import', 'default'],
        external: ['hono'],
        logLevel: 'silent',
      }).catch((error: { errors?: { text: string }[] }) => ({
        errors: error.errors ?? [{ text: String(error) }],
        metafile: undefined,
      }));
      expect(result.errors.map((e) => e.text)).toEqual([]);
      const imports = Object.values(result.metafile!.inputs).flatMap((input) => input.imports.map((i) => i.path));
      expect(imports.filter((path) => path.startsWith('node:'))).toEqual([]);
      expect(Object.keys(result.metafile!.inputs).length).toBeGreaterThan(1);
    });
  }

  it('the check catches a node: import (it is not a test that cannot fail)', async () => {
    const result = await build({
      stdin: {
        contents: "import { createHash } from 'node:crypto'; console.log(createHash);",
        resolveDir: packagesDir,
      },
      bundle: true,
      write: false,
      platform: 'neutral',
      logLevel: 'silent',
    }).then(
      () => [],
      (error: { errors: { text: string }[] }) => error.errors.map((e) => e.text),
    );
    expect(result.join(' ')).toMatch(/node:crypto/);
  });
});
