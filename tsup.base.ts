import { defineConfig, type Options } from 'tsup';

/**
 * The build every package shares: ESM (`.js`) and CJS (`.cjs`) with their own type files (`.d.ts`,
 * `.d.cts`) and source maps, for Node 20, in `dist/`, which is emptied first. A package's
 * `tsup.config.ts` names its entry points (output path without extension → source file) and, where
 * it must, overrides a field (`external`, `format`).
 */
export function packageBuild(entry: Record<string, string>, overrides: Omit<Options, 'entry'> = {}) {
  return defineConfig({
    entry,
    format: ['esm', 'cjs'],
    dts: true,
    clean: true,
    sourcemap: true,
    target: 'node20',
    ...overrides,
  });
}
