/**
 * The built packages keep the names of their classes (tsup.base.ts `keepNames`): esbuild renames a
 * class that refers to itself (`_Limiter`), and `createLimiter(…).constructor.name`, an error's
 * `name` (set from `new.target.name`) and stack traces would show the renamed one. Checked on the
 * built files, ESM and CJS, as users get them (`pnpm build` first, as for every test of the builds).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const packagesDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'packages');
const require = createRequire(import.meta.url);

/** The built root entries of the published packages: `[name, esm, cjs]`. */
const entries = readdirSync(packagesDir)
  .map((dir) => ({
    dir: join(packagesDir, dir),
    pkg: existsSync(join(packagesDir, dir, 'package.json'))
      ? JSON.parse(readFileSync(join(packagesDir, dir, 'package.json'), 'utf8'))
      : undefined,
  }))
  .filter(({ dir, pkg }) => pkg !== undefined && !pkg.private && existsSync(join(dir, 'dist', 'index.js')))
  .map(({ dir, pkg }) => [pkg.name as string, join(dir, 'dist', 'index.js'), join(dir, 'dist', 'index.cjs')] as const);

const isClass = (value: unknown): value is new (...args: never[]) => unknown =>
  typeof value === 'function' && /^class\b/.test(Function.prototype.toString.call(value));

/** Each exported class whose name is not its export's: `Export: name`. */
function renamed(module: Record<string, unknown>): string[] {
  return Object.entries(module)
    .filter(([key, value]) => key !== 'default' && isClass(value) && value.name !== key)
    .map(([key, value]) => `${key}: ${(value as { name: string }).name}`);
}

describe('the built classes keep their names', () => {
  it('finds the builds', () => {
    expect(entries.map(([name]) => name)).toContain('@rl/core');
  });

  for (const [name, esm, cjs] of entries) {
    it(`${name}: every exported class is named as exported, ESM and CJS`, async () => {
      expect(renamed(await import(pathToFileURL(esm).href))).toEqual([]);
      if (existsSync(cjs)) expect(renamed(require(cjs))).toEqual([]);
    });
  }

  it("createLimiter(…).constructor.name is Limiter, an error's name its class's", async () => {
    const core = await import(pathToFileURL(join(packagesDir, 'core', 'dist', 'index.js')).href);
    const store = { charge() {}, capabilities: { local: true, algorithms: ['token-bucket'] } };
    const limiter = core.createLimiter({
      algorithm: core.tokenBucket({ capacity: 1, refillRate: 1 }),
      store,
      prefix: 'p',
    });
    expect(limiter.constructor.name).toBe('Limiter');
    expect(() => core.tokenBucket({})).toThrow(expect.objectContaining({ name: 'InvalidOptionError' }));
  });
});
