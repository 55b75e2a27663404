import { packageBuild } from '../../tsup.base';

export default packageBuild(
  { index: 'src/index.ts' },
  { external: ['@rl/core', '@rl/store-memory', '@rl/store-cluster'] },
);
