/**
 * The example on Bun (`src/bun.ts`) and Deno (`src/deno.ts`), started as its README says, with the
 * runtimes that @rl/hono's runtime smoke suite installs on its first run (into packages/hono/runtimes,
 * see packages/hono/test/smoke-runtimes.ts: their binaries, not their launchers, so a signal reaches
 * the runtime; skipped, saying why, when they cannot be installed). Each answers 429 with
 * the RateLimit headers (memory store, then Redis) and exits 0 on SIGTERM. The app itself is tested
 * on Node (app.test.ts, server.test.ts): this checks that the same files start on the other runtimes.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveUntil429AndStop, startRedisServer, type RedisServerHandle, type ServerCommand } from '@rl/test-support';
import { installSmokeRuntimes, RUNTIME_BINARIES } from '../../../packages/hono/test/smoke-runtimes.js';

const exampleDir = fileURLToPath(new URL('..', import.meta.url));

/** A runtime: its name and how it starts the example (its binary, the README's arguments). */
interface Runtime extends ServerCommand {
  readonly name: string;
}

const runtimeOf = (name: string, binary: string, args: readonly string[]): Runtime => ({
  name,
  label: `${name}: the example`,
  binary,
  args,
  startWithinMs: 30_000,
});

const runtimes: Runtime[] = [
  runtimeOf('Bun', RUNTIME_BINARIES.bun, ['src/bun.ts']),
  runtimeOf('Deno', RUNTIME_BINARIES.deno, ['run', '--allow-net', '--allow-env', 'src/deno.ts']),
];

/** Why the runtimes are not there (they could not be installed), or undefined. */
const unavailable = await installSmokeRuntimes();

describe.each(runtimes)('the example on $name', (runtime) => {
  const installed = unavailable === undefined;
  const skipped = installed ? '' : ` (skipped: ${unavailable})`;

  let redis: RedisServerHandle | undefined;
  beforeAll(async () => {
    if (installed) redis = await startRedisServer();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it.skipIf(!installed)(
    `memory store: answers 429 with the RateLimit headers and exits 0 on SIGTERM${skipped}`,
    async () => {
      const { code, output } = await serveUntil429AndStop(exampleDir, runtime);
      expect(code, output).toBe(0);
      expect(output).toContain(`(${runtime.name}) listening on`);
      expect(output).toContain('(store: memory)');
      expect(output).toContain('closed');
    },
    60_000,
  );

  it.skipIf(!installed)(
    `REDIS_URL set: answers 429 on Redis and closes the client on SIGTERM${skipped}`,
    async () => {
      const { code, output } = await serveUntil429AndStop(exampleDir, runtime, redis!.url);
      expect(code, output).toBe(0);
      expect(output).toContain('(store: redis)');
      expect(output).toContain('closed');
    },
    60_000,
  );
});
