// The workspace packages' entry points mapped to their TypeScript sources, derived from each
// package's name and `exports`: the root vitest.config.ts and ts-loader.mjs resolve `@rl/*` imports
// with it, so tests run the sources (never a stale build) and a new package or entry point needs no
// hand-written alias. An export `./dist/<path>.js` is taken to be built from `./src/<path>.ts`.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const packagesDir = fileURLToPath(new URL('..', import.meta.url));

/** The ESM file an export condition points to (`import`, then `default`), or undefined. */
function esmTarget(target) {
  if (typeof target === 'string') return target;
  if (target === null || typeof target !== 'object') return undefined;
  return esmTarget(target.import) ?? esmTarget(target.default);
}

/**
 * Every entry point of every package in `packages/`: `{ specifier: '@rl/core/testing', source:
 * '/…/packages/core/src/testing/index.ts' }`, most specific first. Throws when an export has no
 * source file where the rule above expects one.
 */
export function workspaceEntryPoints() {
  const entries = [];
  for (const dir of readdirSync(packagesDir).sort()) {
    const manifest = join(packagesDir, dir, 'package.json');
    if (!existsSync(manifest)) continue;
    const { name, exports } = JSON.parse(readFileSync(manifest, 'utf8'));
    if (typeof name !== 'string' || exports === undefined) continue;
    for (const [subpath, target] of Object.entries(typeof exports === 'string' ? { '.': exports } : exports)) {
      const file = esmTarget(target);
      if (file === undefined || !file.startsWith('./dist/') || !file.endsWith('.js')) continue;
      const source = join(packagesDir, dir, `src/${file.slice('./dist/'.length, -'.js'.length)}.ts`);
      if (!existsSync(source)) throw new Error(`${name}: export ${subpath} (${file}) has no source ${source}`);
      entries.push({ specifier: subpath === '.' ? name : `${name}${subpath.slice(1)}`, source });
    }
  }
  return entries.sort((a, b) => b.specifier.length - a.specifier.length);
}

/** {@link workspaceEntryPoints} as vitest/vite aliases: `{ find: /^@rl\/core$/, replacement }`. */
export function workspaceAliases() {
  return workspaceEntryPoints().map(({ specifier, source }) => ({
    find: new RegExp(`^${specifier.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}$`),
    replacement: source,
  }));
}
