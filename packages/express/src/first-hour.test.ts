import express, { type NextFunction, type Request, type Response } from 'express';
import { describe, expect, it } from 'vitest';
import { fixedWindow, InvalidOptionError, tokenBucket } from '@rl/core';
import { serve } from '@rl/test-support';
import { rateLimit, type RateLimitOptions } from './index.js';

// The mistakes of a first hour with rateLimit(): each error names rateLimit and the fix, in one line.
describe('rateLimit: the options mistakes of a first hour', () => {
  const rejection = (options: unknown): InvalidOptionError => {
    try {
      rateLimit(options as RateLimitOptions);
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidOptionError);
      return error as InvalidOptionError;
    }
    throw new Error('accepted');
  };

  it('rateLimit(tokenBucket(…)): "wrap it: { algorithm }", not the algorithm\'s own fields', () => {
    const error = rejection(tokenBucket({ capacity: 20, refillRate: 10 }));
    expect(error.message).toMatch(
      /^Invalid option rateLimit: a token-bucket algorithm\. Expected an options object: wrap the algorithm, rateLimit\(\{ algorithm \}\)/,
    );
    expect(error.message).not.toMatch(/stateTag|maxReserveMs/);
  });

  it('rateLimit({ algorithm: fixedWindow }): call the factory', () => {
    expect(rejection({ algorithm: fixedWindow }).message).toMatch(
      /^Invalid option rateLimit\.algorithm: the fixedWindow factory, uncalled\. Expected an algorithm: call the factory/,
    );
  });

  it("rate-limit-redis's store, or its sendCommand, as store: new RedisStore({ client })", () => {
    const algorithm = tokenBucket({ capacity: 20, refillRate: 10 });
    const rateLimitRedis = { prefix: 'rl:', sendCommand() {}, increment() {}, decrement() {}, resetKey() {} };
    expect(rejection({ algorithm, store: rateLimitRedis }).message).toMatch(
      /^Invalid option rateLimit\.store: an express-rate-limit store .* store: new RedisStore\(\{ client \}\) from @rl\/store-redis/,
    );
    expect(rejection({ algorithm, store: (...args: string[]) => args }).message).toMatch(
      /^Invalid option rateLimit\.store: a function \(rate-limit-redis takes sendCommand; rl does not\)/,
    );
  });
});

describe('rateLimit: a cost function above maxCost, at a request', () => {
  it('the 500 names rateLimit.maxCost, the option the user set', async () => {
    const app = express();
    app.use(rateLimit({ algorithm: fixedWindow({ limit: 10, window: '1m' }), cost: () => 3, maxCost: 2 }));
    app.get('/', (_req, res) => {
      res.send('ok');
    });
    app.use((error: Error, _req: Request, res: Response, _next: NextFunction) => {
      res.status(500).json({ message: error.message });
    });
    const served = await serve(app);
    try {
      const res = await served.request('/');
      expect(res.status).toBe(500);
      expect((res.body as { message: string }).message).toMatch(
        /^Cost 3 is larger than this limiter's maxCost 2\. Raise rateLimit\.maxCost \(at most the fixed-window capacity 10\)/,
      );
    } finally {
      await served.close();
    }
  });
});
