// The collection of the requests the guard never lets proceed (suites/dropped-requests.ts) on Nest 11:
// for this file, @nestjs/* resolve to the Nest 11 packages (see module.nest11.test.ts).
import { vi } from 'vitest';
import { expectNest } from './support/nest-app.js';
import './suites/dropped-requests.js';

vi.mock('@nestjs/common', () => import('@nestjs/common11'));
vi.mock('@nestjs/core', () => import('@nestjs/core11'));
vi.mock('@nestjs/platform-express', () => import('@nestjs/platform-express11'));
vi.mock('@nestjs/platform-fastify', () => import('@nestjs/platform-fastify11'));

expectNest(11);
