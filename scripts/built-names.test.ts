/**
 * The built packages keep the names of their classes (tsup.base.ts `classNames`): esbuild renames a
 * class that refers to itself (`_RateLimitResult`), and `constructor.name`, `console.log`, an error's
 * `name` (set from `new.target.name`) and stack traces would show the renamed one. And they are built
 * without esbuild's `keepNames`, whose `__name` helper redefines a closure's `name` each time it is
 * made, on the hot paths too. Checked on the built files, every entry point, ESM and CJS, as users get
 * them (`pnpm build` first, as for every test of the builds).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const packagesDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'packages');
const require = createRequire(import.meta.url);

/** An export condition's file (`{ import: { default } }` or a plain path), if any. */
const fileOf = (target: unknown, condition: 'import' | 'require'): string | undefined => {
  if (typeof target === 'string') return condition === 'import' ? target : undefined;
  const at = (target as Record<string, unknown> | null)?.[condition];
  return typeof at === 'string' ? at : ((at as { default?: string } | undefined)?.default ?? undefined);
};

/** The built entry points of the published packages, every subpath: `[name, esm, cjs?]`. */
const entries = readdirSync(packagesDir)
  .map((dir) => ({
    dir: join(packagesDir, dir),
    pkg: existsSync(join(packagesDir, dir, 'package.json'))
      ? JSON.parse(readFileSync(join(packagesDir, dir, 'package.json'), 'utf8'))
      : undefined,
  }))
  .filter(({ dir, pkg }) => pkg !== undefined && !pkg.private && existsSync(join(dir, 'dist', 'index.js')))
  .flatMap(({ dir, pkg }) =>
    Object.entries(pkg.exports as Record<string, unknown>)
      .filter(([subpath]) => subpath !== './package.json')
      .map(([subpath, target]) => {
        const [esm, cjs] = [fileOf(target, 'import'), fileOf(target, 'require')];
        return [join(pkg.name, subpath), join(dir, esm!), cjs && join(dir, cjs)] as const;
      }),
  );

/** Every built JavaScript file of the published packages. */
const builtFiles = entries
  .map(([, esm]) => dirname(esm))
  .filter((dir, i, dirs) => dirs.indexOf(dir) === i)
  .flatMap((dir) =>
    readdirSync(dir)
      .filter((f) => /\.c?js$/.test(f))
      .map((f) => join(dir, f)),
  );

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
      if (cjs !== undefined) expect(renamed(require(cjs))).toEqual([]);
    });
  }

  it('no built file renames a class or defines names per call', () => {
    const found = builtFiles.flatMap((file) => {
      const code = readFileSync(file, 'utf8');
      // esbuild's `keepNames` helper (`__name(fn, "name")` at every named closure's creation), and a
      // class renamed in its body whose name was not given back by tsup.base.ts `classNames`.
      const perCall = code.includes('__name(') ? [`${file}: __name`] : [];
      const renamedClasses = [...code.matchAll(/\bvar (\w+) = class (_\1\d*)\b[^{]*\{\n(.*)\n(.*)/g)]
        .filter(([, name, , line1, line2]) => !(line1!.includes('static {') && line2!.includes(`value: "${name}"`)))
        .map(([, name, inner]) => `${file}: ${name} as ${inner}`);
      return [...perCall, ...renamedClasses];
    });
    expect(builtFiles.length).toBeGreaterThan(20);
    expect(found).toEqual([]);
  });

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
