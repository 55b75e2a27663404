// A type test: `tsc` checks it (the package's `typecheck` task covers src), vitest runs it as a plain
// test. `ctx.state.rateLimit` is the rl result wherever Koa's default state is used, not `any`.
import Koa, { type Context, type Middleware } from 'koa';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { fixedWindow } from '@rl/core';
import { rateLimit, type RateLimitResult } from './index.js';

describe('ctx.state.rateLimit', () => {
  it('is typed RateLimitResult | undefined in middlewares, and in the functions rl calls with ctx', () => {
    const app = new Koa();
    app.use(
      rateLimit({
        algorithm: fixedWindow({ limit: 5, window: '1m' }),
        onLimit: (ctx: Context) => {
          expectTypeOf(ctx.state.rateLimit).toEqualTypeOf<RateLimitResult | undefined>();
        },
      }),
    );
    app.use((ctx) => {
      expectTypeOf(ctx.state.rateLimit).toEqualTypeOf<RateLimitResult | undefined>();
      expectTypeOf(ctx.state.rateLimit).not.toBeAny();
      if (ctx.state.rateLimit) expectTypeOf(ctx.state.rateLimit.remaining).toEqualTypeOf<number>();
    });
    const typed: Middleware = (ctx, next) => {
      // @ts-expect-error: a wrong use is no longer hidden by `any`.
      const wrong: string = ctx.state.rateLimit;
      void wrong;
      return next();
    };
    app.use(typed);
    expect(app.middleware).toHaveLength(3);
  });
});
