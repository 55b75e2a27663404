import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (path: string) => fileURLToPath(new URL(path, import.meta.url));

/**
 * One vitest run for the whole monorepo. Workspace packages resolve to their TypeScript sources, so
 * tests never depend on a stale build (the packed-tarball test checks the builds separately).
 */
export default defineConfig({
  resolve: {
    alias: [
      { find: /^@rl\/core\/testing$/, replacement: src('./packages/core/src/testing/index.ts') },
      { find: /^@rl\/core$/, replacement: src('./packages/core/src/index.ts') },
      { find: /^@rl\/store-memory$/, replacement: src('./packages/store-memory/src/index.ts') },
      { find: /^@rl\/store-redis$/, replacement: src('./packages/store-redis/src/index.ts') },
      { find: /^@rl\/express$/, replacement: src('./packages/express/src/index.ts') },
      { find: /^@rl\/fastify$/, replacement: src('./packages/fastify/src/index.ts') },
      { find: /^@rl\/koa$/, replacement: src('./packages/koa/src/index.ts') },
    ],
  },
  test: {
    include: ['packages/*/src/**/*.test.ts', 'packages/*/test/**/*.test.ts', 'examples/*/src/**/*.test.ts', 'examples/*/test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
