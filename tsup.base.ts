import { defineConfig, type Options } from 'tsup';

/** tsup's plugin shape (tsup does not export its type): `renderChunk` may rewrite each output file. */
type ChunkPlugin = NonNullable<Options['plugins']>[number];

/**
 * A class that names itself in its body (`new RateLimitResult(…)` in a method) is written by esbuild as
 * `var RateLimitResult = class _RateLimitResult { … }`, so its `name` (what `console.log`, `util.inspect`
 * and `constructor.name` show) would be `_RateLimitResult`. This gives such a class its own name back
 * in a static block, once, when the module loads: what esbuild's `keepNames` does for a class, without
 * its cost elsewhere (`keepNames` also wraps every named closure in a `__name` call that redefines the
 * closure's `name` each time it is made: 4 times per Redis decision, 12 per request of three limits;
 * docs/design/releases.md). scripts/built-names.test.ts holds every built class to its name.
 */
const classNames: ChunkPlugin = {
  name: 'rl-class-names',
  renderChunk(code) {
    const named = code.replace(
      /\bvar (\w+) = class (_\1\d*)( extends [^{]+)? \{\n/g,
      (_, name: string, inner: string, heritage = '') =>
        `var ${name} = class ${inner}${heritage} {\n  static {\n    Object.defineProperty(this, "name", { value: "${name}", configurable: true });\n  }\n`,
    );
    return named === code ? undefined : { code: named };
  },
};

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
    // Not `keepNames`: its `__name` helper redefines a closure's `name` each time the closure is made,
    // which the hot paths pay per decision. Exported functions keep their names without it; classes
    // that name themselves get theirs back from `classNames`.
    plugins: [classNames],
    ...overrides,
  });
}
