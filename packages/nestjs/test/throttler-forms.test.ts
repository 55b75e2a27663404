// @nestjs/throttler's own forms given to rl's module: forRoot([{ ttl, limit }]) (an array of
// throttlers, named or not) is refused as itself, with the rl options those throttlers are, rather
// than as an object whose options are 0, 1, … (the array spread).
import 'reflect-metadata';
import { describe, expect, it } from 'vitest';
import { InvalidOptionError } from '@rl/core';
import { RateLimitModule } from '../src/index.js';
import { PLATFORMS, startNestApp } from './support/nest-app.js';

describe("RateLimitModule given @nestjs/throttler's throttlers", () => {
  it('forRoot([{ ttl, limit }]): use forRoot({ algorithm: fixedWindow({ limit, window: ttl }) })', () => {
    const error = (() => {
      try {
        RateLimitModule.forRoot([{ ttl: 60000, limit: 10 }] as never);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect(error).toMatchObject({ field: 'RateLimitModule.forRoot' });
    expect((error as Error).message).toContain(
      'Expected an options object: RateLimitModule.forRoot({ algorithm: fixedWindow({ limit: 10, window: 60000 }) })',
    );
  });

  it("forRoot([{ name: 'short', ttl, limit }, …]): use limits, each named", () => {
    expect(() =>
      RateLimitModule.forRoot([
        { name: 'short', ttl: 1000, limit: 3 },
        { name: 'long', ttl: 60000, limit: 100 },
      ] as never),
    ).toThrowError(
      "RateLimitModule.forRoot({ limits: [{ name: 'short', algorithm: fixedWindow({ limit: 3, window: 1000 }) }, { name: 'long', algorithm: fixedWindow({ limit: 100, window: 60000 }) }] })",
    );
  });

  it.each(PLATFORMS)(
    "on %s, forRootAsync's factory returning throttlers stops the app from starting with the same fix",
    async (platform) => {
      await expect(
        startNestApp(platform, {
          imports: [RateLimitModule.forRootAsync({ useFactory: () => [{ ttl: 60000, limit: 10 }] as never })],
        }),
      ).rejects.toMatchObject({
        code: 'RL_INVALID_OPTION',
        field: 'RateLimitModule.forRootAsync',
        message: expect.stringContaining(
          'RateLimitModule.forRootAsync({ algorithm: fixedWindow({ limit: 10, window: 60000 }) })',
        ),
      });
    },
  );
});
