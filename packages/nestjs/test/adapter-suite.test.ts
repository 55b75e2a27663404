// The shared adapter suite through Nest, on its Express and its Fastify platform (over a socket, and over Fastify's inject()), on the memory store and a real Redis.
import 'reflect-metadata';
import { describeAdapter } from '@rl/test-support';
import { RedisStore } from '@rl/store-redis';
import { nestAdapter } from './support/suite-adapter.js';

describeAdapter([nestAdapter('express'), nestAdapter('fastify'), nestAdapter('fastify', 'inject')], { redisStore: (client, prefix) => new RedisStore({ client, prefix }) });
