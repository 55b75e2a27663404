import { packageBuild } from '../../tsup.base';

// ESM only: everything here runs inside vitest.
export default packageBuild({ index: 'src/index.ts' }, { format: ['esm'] });
