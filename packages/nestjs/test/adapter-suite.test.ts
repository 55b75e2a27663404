// The shared adapter suite through Nest, on its Express and its Fastify platform, on the memory store and a real Redis.
import 'reflect-metadata';
import { describeAdapter } from '@rl/test-support';
import { RedisStore } from '@rl/store-redis';
import { nestAdapter } from './support/suite-adapter.js';

describeAdapter([nestAdapter('express'), nestAdapter('fastify')], { redisStore: (client, prefix) => new RedisStore({ client, prefix }) });
