import { packageBuild } from '../../tsup.base';

// One build for both entry points, so the ESM files share their chunks (one copy of the core).
// `@rl/core/testing` runs inside vitest, which is ESM-only: package.json exports it for `import` only,
// and its CJS output is left out of the package.
export default packageBuild({ index: 'src/index.ts', 'testing/index': 'src/testing/index.ts' }, { external: ['vitest', 'fast-check'] });
