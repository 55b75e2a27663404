import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Algorithm } from '@rl/core';
import { ALGORITHM_KINDS, withBlock } from '@rl/core/store';
import { kindSuites } from '@rl/core/testing';
import { luaScripts } from '@rl/store-redis';
// @ts-expect-error: a plain .mjs build script without types
import { generatedPath, renderModule } from '../scripts/generate-lua.mjs';

/** One algorithm of every kind (both modes of the leaky bucket), from the kind suites. */
const algorithms: Algorithm[] = kindSuites.flatMap((suite) =>
  suite.configurations.map((configuration) =>
    configuration({ limit: 10, rate: 2, windowMs: 60_000, countDenied: true }),
  ),
);
/** Every rate algorithm with a lockout: its blocking variant. */
const blocking: Algorithm[] = algorithms.filter((a) => a.stateKind !== 'leases').map((a) => withBlock(a, 60_000));

describe('generated Lua module', () => {
  it('matches the .lua files (run `pnpm --filter @rl/store-redis generate` when this fails)', () => {
    expect(readFileSync(generatedPath as string, 'utf8')).toBe((renderModule as () => string)());
  });

  it('holds one script per algorithm kind and a blocking variant per rate kind, each with its number of keys', () => {
    const rates = ALGORITHM_KINDS.filter((kind) => blocking.some((a) => a.kind === kind));
    expect(Object.keys(luaScripts).sort()).toEqual(
      [...ALGORITHM_KINDS, ...rates.map((kind) => `${kind}-block`)].sort(),
    );
    expect(luaScripts['sliding-window-log'].numberOfKeys).toBe(2);
    expect(luaScripts['sliding-window-log-block'].numberOfKeys).toBe(3);
  });

  it.each(
    [...algorithms, ...blocking].map(
      (a) => [`${a.kind}${a.mayDelay ? ' (shape)' : ''}${a.blockMs > 0 ? ' with a lockout' : ''}`, a] as const,
    ),
  )('%s: its description agrees with its Lua twin (layout, keys, constants)', (_name, algorithm) => {
    const { name, layout, constants, timed } = algorithm.script;
    const script = luaScripts[name as keyof typeof luaScripts];
    expect(script, name).toBeDefined();
    expect(script.compact).toBe(layout.compact);
    expect(script.numberOfKeys).toBe(layout.compact ? 1 : layout.keys.length);
    expect([...constants.map((c) => c.name), ...(timed?.names ?? [])].sort()).toEqual(script.constants);
  });
});
