import { packageBuild } from '../../tsup.base';

export default packageBuild(
  { index: 'src/index.ts', remote: 'src/remote.ts' },
  { external: ['@rl/core', '@rl/store-memory'] },
);
