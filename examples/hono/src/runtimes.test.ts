/**
 * The example on Bun (`src/bun.ts`) and Deno (`src/deno.ts`), started as its README says, with the
 * runtimes that @rl/hono's runtime smoke suite installs (packages/hono's devDependencies `bun` and
 * `deno`: their binaries, not their launchers, so a signal reaches the runtime). Each answers 429 with
 * the RateLimit headers (memory store, then Redis) and exits 0 on SIGTERM. The app itself is tested
 * on Node (app.test.ts, server.test.ts): this checks that the same files start on the other runtimes.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveUntil429AndStop, startRedisServer, type RedisServerHandle, type ServerCommand } from '@rl/test-support';

const exampleDir = fileURLToPath(new URL('..', import.meta.url));
const hono = fileURLToPath(new URL('../../../packages/hono/node_modules/', import.meta.url));

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
  runtimeOf('Bun', `${hono}bun/bin/bun.exe`, ['src/bun.ts']),
  runtimeOf('Deno', `${hono}deno/deno`, ['run', '--allow-net', '--allow-env', 'src/deno.ts']),
];

describe.each(runtimes)('the example on $name', (runtime) => {
  const installed = existsSync(runtime.binary);
  const skipped = installed
    ? ''
    : ` (skipped: ${runtime.binary} is missing: the runtime comes with packages/hono's devDependencies)`;

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
