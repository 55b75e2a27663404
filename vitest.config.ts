import { defineConfig } from 'vitest/config';
import { workspaceAliases } from '@rl/test-support/workspace-aliases';

// The tests pause, flush and fill the Redis they are given: REDIS_URL or REDIS_CLUSTER_NODES set
// without RL_TEST_REDIS_DISPOSABLE=1 is refused by the Redis fixtures (packages/test-support/src/
// redis-server.ts), in the test files that start a Redis only, in one line: a file that uses no Redis
// runs whatever the environment says.

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
    include: [
      'packages/*/src/**/*.test.ts',
      'packages/*/test/**/*.test.ts',
      'examples/*/src/**/*.test.ts',
      'examples/*/test/**/*.test.ts',
      'scripts/*.test.ts',
    ],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two files at a time on a 2-core machine (vitest's default is one fewer than the cores): most
    // files wait on Redis servers, child processes and sockets. On a quiet machine the whole run
    // passed in 336 s against 597 s one at a time (docs/design/testing.md).
    maxWorkers: 2,
    // Nothing left behind: the run gets its own temporary directory and a mark its processes inherit;
    // at its end, a process with the mark or an entry in the directory fails it (then is stopped or
    // removed). See packages/test-support/src/global-setup.ts and docs/design/testing.md.
    globalSetup: ['packages/test-support/src/global-setup.ts'],
    // After the summary, why tests were skipped, once per reason (the default reporter only counts them).
    reporters: ['default', 'packages/test-support/src/skip-reasons.ts'],
    // A passing run is quiet: what a test prints (figures, the adapters' outage logs) is shown for
    // the tests that fail only.
    silent: 'passed-only',
    // The trust-proxy warnings are emitted by every app a test mounts with a forwarding header and
    // no (or every) proxy trusted; the short-window and default-prefix ones by the tests' windows of
    // a few ms and their Redis limits without a prefix. Node prints each on stderr. Not printing them
    // keeps the 'warning' event: the tests that expect one (collectWarnings) or its absence still see it.
    execArgv: [
      '--disable-warning=RL_TRUST_PROXY',
      '--disable-warning=RL_TRUST_ALL_PROXIES',
      '--disable-warning=RL_SHORT_WINDOW',
      '--disable-warning=RL_DEFAULT_PREFIX',
    ],
  },
});
