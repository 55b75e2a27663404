import { defineConfig, type Options } from 'tsup';

/**
 * The build every package shares: ESM (`.js`) and CJS (`.cjs`) with their own type files (`.d.ts`,
 * `.d.cts`), for Node 20, in `dist/`, which is emptied first. A package's `tsup.config.ts` names its
 * entry points (output path without extension → source file) and, where it must, overrides a field
 * (`external`, `format`).
 *
 * No source maps, and no `src/` in the tarballs (each package's `files`): the output is neither
 * minified nor renamed, so a stack trace or a debugger in a user's app shows readable code with rl's
 * own names. The maps were most of `@rl/core`'s tarball (1 MB of 2.26: each source copied into the ESM
 * and the CJS map, besides `src/` itself), and the CJS build of a package split into chunks wrote
 * the absolute build path into its maps. `scripts/pack-test.mjs` holds each tarball to a size budget
 * and refuses a `.map` file, a `sourceMappingURL` comment or `src/` in it.
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
    sourcemap: false,
    target: 'node20',
    // Classes keep their names: esbuild may rename a class (`_Limiter` for one that refers to itself),
    // and `constructor.name`, an error's `name` (set from `new.target.name`) and stack traces would
    // show it. scripts/built-names.test.ts holds the built entries to it.
    keepNames: true,
    ...overrides,
  });
}
