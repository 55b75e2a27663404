import { packageBuild } from '../../tsup.base';

// ESM only: the chart library (Observable Plot, on d3) is ESM-only, and a command has no require() callers.
export default packageBuild({ index: 'src/index.ts', bin: 'src/bin.ts' }, { format: ['esm'] });
