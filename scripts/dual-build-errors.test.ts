/**
 * One error class per error across the two builds: an app may load `@rl/core` both ways (it imports
 * the ESM build while a dependency `require`s the CommonJS one), and each build carries its own
 * classes. `instanceof` must hold whichever build made the error and whichever build's class is
 * asked (`RateLimitError[Symbol.hasInstance]`, see packages/core/src/errors.ts). Checked on the
 * built files as users get them (`pnpm build` first, as for every test of the builds).
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const packagesDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'packages');
const require = createRequire(import.meta.url);

type ErrorClass = new (...args: never[]) => Error;
interface CoreBuild {
  tokenBucket(options: unknown): unknown;
  RateLimitError: ErrorClass;
  InvalidOptionError: ErrorClass;
  InvalidCostError: ErrorClass;
  StoreError: ErrorClass;
}

/** The error `make` throws. */
function thrown(make: () => unknown): unknown {
  try {
    make();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('an error of either build is an instance of either build’s classes', async () => {
  const esm = (await import(pathToFileURL(join(packagesDir, 'core', 'dist', 'index.js')).href)) as CoreBuild;
  const cjs = require(join(packagesDir, 'core', 'dist', 'index.cjs')) as CoreBuild;

  it('the two builds are two copies (the case this guards)', () => {
    expect(esm.InvalidOptionError).not.toBe(cjs.InvalidOptionError);
  });

  for (const [maker, made] of [
    ['ESM', esm],
    ['CommonJS', cjs],
  ] as const) {
    const error = thrown(() => made.tokenBucket({ capacity: -1 }));
    for (const [asker, asked] of [
      ['ESM', esm],
      ['CommonJS', cjs],
    ] as const) {
      it(`an option error of the ${maker} build, asked with the ${asker} build's classes`, () => {
        expect(error instanceof asked.InvalidOptionError).toBe(true);
        expect(error instanceof asked.RateLimitError).toBe(true);
        expect(error instanceof Error).toBe(true);
        // Another class of the family is not matched.
        expect(error instanceof asked.InvalidCostError).toBe(false);
        expect(error instanceof asked.StoreError).toBe(false);
      });
    }
  }

  it('a value that is not an error of rl is no instance', () => {
    for (const value of [
      undefined,
      null,
      1,
      'InvalidOptionError',
      {},
      new Error('x'),
      { name: 'InvalidOptionError' },
    ]) {
      expect(value instanceof esm.InvalidOptionError).toBe(false);
      expect(value instanceof cjs.RateLimitError).toBe(false);
    }
  });

  it('a store built for CommonJS throws errors the ESM core recognizes', () => {
    const { RedisStore } = require(join(packagesDir, 'store-redis', 'dist', 'index.cjs')) as {
      RedisStore: new (options: unknown) => unknown;
    };
    const error = thrown(() => new RedisStore({}));
    expect(error instanceof esm.InvalidOptionError).toBe(true);
  });
});
