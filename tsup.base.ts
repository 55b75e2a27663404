import { defineConfig, type Options } from 'tsup';

/**
 * The build every package shares: ESM (`.js`) and CJS (`.cjs`) with their own type files (`.d.ts`,
 * `.d.cts`) and source maps, for Node 20, in `dist/`, which is emptied first. A package's
 * `tsup.config.ts` names its entry points (output path without extension → source file) and, where
 * it must, overrides a field (`external`, `format`).
 *
 * The source maps carry no copy of the sources (`sourcesContent: false`): they point at `../src/*.ts`,
 * which every package ships beside `dist/` (its `files`), so a stack trace or a debugger in a user's
 * app opens the TypeScript line, and the tarball holds each source once instead of three times (the
 * file, and a copy in the ESM and in the CJS map). `scripts/pack-test.mjs` checks that every map's
 * sources are in the tarball.
 *
 * `RL_BUILD_JS_ONLY=1` (the root `pnpm example`) skips the type files: an app run by tsx needs the
 * JavaScript only, and the declarations are most of a cold build's time. turbo.json lists the variable
 * in the build's `env`, so such a build is cached apart from the full one.
 */
export function packageBuild(entry: Record<string, string>, overrides: Omit<Options, 'entry'> = {}) {
  return defineConfig({
    entry,
    format: ['esm', 'cjs'],
    dts: process.env.RL_BUILD_JS_ONLY !== '1',
    clean: true,
    sourcemap: true,
    esbuildOptions(options) {
      options.sourcesContent = false;
    },
    target: 'node20',
    // Classes keep their names: esbuild may rename a class (`_Limiter` for one that refers to itself),
    // and `constructor.name`, an error's `name` (set from `new.target.name`) and stack traces would
    // show it. scripts/built-names.test.ts holds the built entries to it.
    keepNames: true,
    ...overrides,
  });
}
