import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { fixedWindow, tokenBucket } from '@rl/core';
import rateLimit, { type RateLimitPluginOptions } from './index.js';

describe('@rl/fastify: what the README says of register', () => {
  it('register without await: routes declared before the plugin loaded are limited; app.rateLimit exists once it loaded (await app.after())', async () => {
    const app = Fastify();
    void app.register(rateLimit, { algorithm: fixedWindow({ limit: 1, window: '1m' }) });
    app.get('/', async () => 'ok');
    // Fastify loads a plugin at app.after(), app.ready() or app.listen(): its decorator is not there yet.
    expect(app.rateLimit).toBeUndefined();
    await app.after();
    expect(typeof app.rateLimit).toBe('function');
    expect((await app.inject('/')).statusCode).toBe(200);
    expect((await app.inject('/')).statusCode).toBe(429);
    await app.close();
  });

  it('register(rateLimit, tokenBucket(…)) rejects: "wrap it: { algorithm }"', async () => {
    const app = Fastify();
    await expect(
      app.register(rateLimit, tokenBucket({ capacity: 20, refillRate: 10 }) as unknown as RateLimitPluginOptions),
    ).rejects.toThrow(
      /^Invalid option rateLimit: a token-bucket algorithm\. Expected an options object: wrap the algorithm, rateLimit\(\{ algorithm \}\)/,
    );
    await app.close();
  });
});
