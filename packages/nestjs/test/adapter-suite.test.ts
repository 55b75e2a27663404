// The shared adapter suite through Nest 12, on its Express and its Fastify platform (over a socket, and over Fastify's inject()), on the memory store and a real Redis; adapter-suite.nest11.test.ts runs it on Nest 11.
import 'reflect-metadata';
import { describeAdapter } from '@rl/test-support';
import { RedisStore } from '@rl/store-redis';
import { expectNest } from './support/nest-app.js';
import { nestAdapter } from './support/suite-adapter.js';

expectNest(12);
describeAdapter([nestAdapter('express'), nestAdapter('fastify'), nestAdapter('fastify', 'inject')], {
  redisStore: (client, prefix) => new RedisStore({ client, prefix }),
});
