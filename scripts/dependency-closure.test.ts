/**
 * What a published entry point loads is installed with it: every package an entry point (an
 * `exports` entry or a `bin`) imports statically, directly or through the other `@rl/*` packages it
 * loads, is a dependency or a required peer of the package whose file imports it. An optional peer
 * may be imported only where its package says the entry needs it (OPTIONAL_PEER_ENTRIES): `@rl/cli`
 * once loaded `@rl/core/testing`, which imports vitest, an optional peer of `@rl/core` that no user
 * of the CLI installs, and `rl simulate` crashed at start in every fresh project. A dynamic `import()`
 * of an optional peer (a store's client library, loaded when used) is not a static import and passes.
 * Checked on the built files, as users get them: each entry bundled by esbuild, the workspace's
 * `@rl/*` packages followed through their `exports`, every other package left external and listed.
 */
import { build, type Plugin } from 'esbuild';
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const packagesDir = join(resolve(dirname(fileURLToPath(import.meta.url)), '..'), 'packages');

/** Entry points allowed to import an optional peer of their package, and which: the entry is documented as needing it. */
const OPTIONAL_PEER_ENTRIES: Readonly<Record<string, readonly string[]>> = {
  // The conformance suite registers vitest tests, and its property tests draw with fast-check.
  '@rl/core/testing': ['vitest', 'fast-check'],
};

interface Manifest {
  readonly name: string;
  readonly private?: boolean;
  readonly exports?: Record<string, string | { import?: { default?: string } }>;
  readonly bin?: Record<string, string>;
  readonly dependencies?: Record<string, string>;
  readonly peerDependencies?: Record<string, string>;
  readonly peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

const manifests = new Map<string, Manifest>(
  readdirSync(packagesDir).flatMap((dir) => {
    try {
      return [[dir, JSON.parse(readFileSync(join(packagesDir, dir, 'package.json'), 'utf8')) as Manifest] as const];
    } catch {
      return [];
    }
  }),
);

/** The package name of a bare specifier (`@scope/name/sub` → `@scope/name`, `name/sub` → `name`). */
const packageOf = (specifier: string): string =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');

/** The published entry points of a package: its ESM `exports` (but package.json) and its `bin`s, as files. */
function entriesOf(dir: string, manifest: Manifest): [string, string][] {
  const entries: [string, string][] = [];
  for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
    const file = typeof target === 'string' ? target : target.import?.default;
    if (file === undefined || file.endsWith('.json')) continue;
    entries.push([
      subpath === '.' ? manifest.name : `${manifest.name}/${subpath.slice(2)}`,
      join(packagesDir, dir, file),
    ]);
  }
  for (const [command, file] of Object.entries(manifest.bin ?? {}))
    entries.push([`${manifest.name} (bin ${command})`, join(packagesDir, dir, file)]);
  return entries;
}

/** The workspace directory of a file (`packages/<dir>/…`), or undefined outside it. */
const ownerDir = (file: string): string | undefined => {
  const path = relative(packagesDir, file);
  return path.startsWith('..') ? undefined : path.split(sep)[0];
};

/** Every package other than the workspace's `@rl/*` and Node's own is external (listed, not bundled). */
const thirdPartyExternal: Plugin = {
  name: 'third-party-external',
  setup(pluginBuild) {
    pluginBuild.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.path.startsWith('@rl/')) return undefined;
      return { path: args.path, external: true };
    });
  },
};

/** The static imports of packages outside the workspace reached from `entry`: the importing package's directory and the specifier. */
async function staticImports(entry: string): Promise<{ importer: string; specifier: string }[]> {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    metafile: true,
    platform: 'node',
    format: 'esm',
    conditions: ['import'],
    plugins: [thirdPartyExternal],
    logLevel: 'silent',
  });
  return Object.entries(result.metafile.inputs).flatMap(([input, { imports }]) =>
    imports
      .filter((i) => i.external && i.kind === 'import-statement')
      .filter((i) => !i.path.startsWith('node:') && !builtinModules.includes(i.path))
      .map((i) => ({ importer: ownerDir(resolve(input)) ?? input, specifier: i.path })),
  );
}

/** Why `specifier`, imported statically by a file of package directory `importer` reached from `entryName`, would not be installed; undefined when it is. */
function missing(entryName: string, importer: string, specifier: string): string | undefined {
  const manifest = manifests.get(importer);
  if (manifest === undefined) return `${specifier}: imported from ${importer}, outside the packages`;
  const name = packageOf(specifier);
  if (manifest.dependencies?.[name] !== undefined) return undefined;
  if (manifest.peerDependencies?.[name] === undefined)
    return `${manifest.name} imports ${specifier}, which is neither its dependency nor its peer`;
  if (manifest.peerDependenciesMeta?.[name]?.optional !== true) return undefined;
  if (OPTIONAL_PEER_ENTRIES[entryName]?.includes(name)) return undefined;
  return `${entryName} loads ${manifest.name}'s ${specifier}, an optional peer its users need not install`;
}

describe('what a published entry point loads is installed with it', () => {
  for (const [dir, manifest] of manifests) {
    if (manifest.private === true) continue;
    for (const [entryName, file] of entriesOf(dir, manifest)) {
      it(`${entryName}: every static import is a dependency or a required peer of its importer`, async () => {
        const imports = await staticImports(file);
        const faults = imports.flatMap(({ importer, specifier }) => missing(entryName, importer, specifier) ?? []);
        expect([...new Set(faults)]).toEqual([]);
      });
    }
  }

  it('catches an entry that loads an optional peer (it is not a test that cannot fail)', async () => {
    // The testing entry imports vitest: allowed for it, refused for any other entry that reaches it.
    const imports = await staticImports(join(packagesDir, 'core', 'dist', 'testing', 'index.js'));
    const vitest = imports.filter((i) => i.specifier === 'vitest');
    expect(vitest.length).toBeGreaterThan(0);
    expect(missing('@rl/core/testing', vitest[0]!.importer, 'vitest')).toBeUndefined();
    expect(missing('@rl/cli (bin rl)', vitest[0]!.importer, 'vitest')).toMatch(
      /optional peer its users need not install/,
    );
  });
});
