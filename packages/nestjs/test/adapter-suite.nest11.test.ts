// The shared adapter suite through Nest 11, on its Express and its Fastify platform (over a socket, and
// over Fastify's inject()), on the memory store and a real Redis: for this file, @nestjs/* resolve to
// the Nest 11 packages (see module.nest11.test.ts).
import 'reflect-metadata';
import { vi } from 'vitest';
import { describeAdapter } from '@rl/test-support';
import { RedisStore } from '@rl/store-redis';
import { expectNest } from './support/nest-app.js';
import { nestAdapter } from './support/suite-adapter.js';

vi.mock('@nestjs/common', () => import('@nestjs/common11'));
vi.mock('@nestjs/core', () => import('@nestjs/core11'));
vi.mock('@nestjs/platform-express', () => import('@nestjs/platform-express11'));
vi.mock('@nestjs/platform-fastify', () => import('@nestjs/platform-fastify11'));

expectNest(11);
describeAdapter([nestAdapter('express'), nestAdapter('fastify'), nestAdapter('fastify', 'inject')], {
  redisStore: (client, prefix) => new RedisStore({ client, prefix }),
});
