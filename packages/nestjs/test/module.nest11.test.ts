// The module's tests (suites/module.ts) on Nest 11: for this file, @nestjs/* resolve to the Nest 11
// packages (the `@nestjs/*11` devDependencies), in the sources of @rl/nestjs too (see NEST_MAJOR).
import { vi } from 'vitest';
import { expectNest } from './support/nest-app.js';
import './suites/module.js';

vi.mock('@nestjs/common', () => import('@nestjs/common11'));
vi.mock('@nestjs/core', () => import('@nestjs/core11'));
vi.mock('@nestjs/platform-express', () => import('@nestjs/platform-express11'));
vi.mock('@nestjs/platform-fastify', () => import('@nestjs/platform-fastify11'));

expectNest(11);
