import { defineConfig } from 'vitest/config';
import { workspaceAliases } from '@rl/test-support/workspace-aliases';

/**
 * One vitest run for the whole monorepo. Workspace packages resolve to their TypeScript sources, so
 * tests never depend on a stale build (the packed-tarball test checks the builds separately). The
 * aliases come from each package's name and `exports` (`@rl/core`, `@rl/core/testing`, …): a new
 * package or entry point needs no line here.
 */
export default defineConfig({
  resolve: {
    alias: workspaceAliases(),
  },
  test: {
    include: ['packages/*/src/**/*.test.ts', 'packages/*/test/**/*.test.ts', 'examples/*/src/**/*.test.ts', 'examples/*/test/**/*.test.ts', 'scripts/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
