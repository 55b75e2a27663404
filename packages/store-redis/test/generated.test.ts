import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { luaScripts } from '@rl/store-redis';
// @ts-expect-error: a plain .mjs build script without types
import { generatedPath, renderModule } from '../scripts/generate-lua.mjs';

describe('generated Lua module', () => {
  it('matches the .lua files (run `pnpm --filter @rl/store-redis generate` when this fails)', () => {
    expect(readFileSync(generatedPath as string, 'utf8')).toBe((renderModule as () => string)());
  });

  it('holds one script per algorithm kind, each with its number of keys', () => {
    expect(Object.keys(luaScripts).sort()).toEqual(
      ['concurrency', 'fixed-window', 'leaky-bucket', 'sliding-window-counter', 'sliding-window-log', 'token-bucket'],
    );
    expect(luaScripts['sliding-window-log'].numberOfKeys).toBe(2);
  });
});
