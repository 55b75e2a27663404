import { packageBuild } from '../../tsup.base';

// One build for every entry point, split into shared chunks in both formats (CJS too), so that
// `@rl/core`, `@rl/core/http` and `@rl/core/store` load one copy of the core: one `Limiter` class,
// one set of error classes (`instanceof` holds across entry points).
// `@rl/core/testing` runs inside vitest, which is ESM-only: package.json exports it for `import` only,
// and its CJS output is left out of the package. `@rl/core/simulation` (virtual time, the simulator's
// models) imports neither vitest nor fast-check: what a program needs of the testing side without them.
// `treeshake`: rollup writes the CJS chunks. Without it tsup converts the ESM chunks to CJS with sucrase,
// which also lowers what Node 20 runs natively (class fields into per-instance initializer calls,
// `?.` and `??` into helper calls) and renames classes with fields (`_class6`).
export default packageBuild(
  {
    index: 'src/index.ts',
    'http/index': 'src/http/index.ts',
    'store/index': 'src/store/index.ts',
    'simulation/index': 'src/simulation/index.ts',
    'testing/index': 'src/testing/index.ts',
  },
  { external: ['vitest', 'fast-check'], splitting: true, treeshake: true },
);
