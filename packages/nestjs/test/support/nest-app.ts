/**
 * Real Nest apps for the tests, on either platform, listening on 127.0.0.1: a root module made of
 * the given imports, controllers and providers, created with `NestFactory` (no abort on a bad start:
 * the start rejects), on the Nest major of the test file ({@link NEST_MAJOR}).
 */
import type { AddressInfo } from 'node:net';
import {
  Module,
  type DynamicModule,
  type INestApplication,
  type LoggerService,
  type Provider,
  type Type,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NestFactory as NestFactory11 } from '@nestjs/core11';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { request, type Inject, type RequestInit, type TestResponse } from '@rl/test-support';

export type Platform = 'express' | 'fastify';
export const PLATFORMS: readonly Platform[] = ['express', 'fastify'];

export type NestMajor = 11 | 12;

/**
 * The Nest major the test file runs on: 12 (the devDependencies' `@nestjs/*`), or 11 in a
 * `*.nest11.test.ts` file, which resolves `@nestjs/*` to the Nest 11 packages (the `@nestjs/*11`
 * aliases) with `vi.mock`, for itself, this support and the sources of @rl/nestjs alike. One major per
 * file: the sources import `@nestjs/common` and `@nestjs/core`, and their class tokens
 * (`DiscoveryService`, `HttpAdapterHost`), `Logger` and `HttpException` must be the app's own, as in
 * an app, which has one Nest.
 */
export const NEST_MAJOR: NestMajor = (NestFactory as unknown) === NestFactory11 ? 11 : 12;

/** `Nest 11 on Express 5`, `Nest 12 on Fastify 5`: the app's Nest and platform, for test names. */
export function nestName(platform: Platform): string {
  return `Nest ${NEST_MAJOR} on ${platform === 'express' ? 'Express 5' : 'Fastify 5'}`;
}

/**
 * Fails the test file at collection unless it runs on Nest `major` (a `*.nest11.test.ts` file whose
 * `vi.mock` lines are missing would run Nest 12 a second time).
 */
export function expectNest(major: NestMajor): void {
  if (NEST_MAJOR !== major)
    throw new Error(
      `this file must run on Nest ${major}, but @nestjs/core is Nest ${NEST_MAJOR}: see the vi.mock lines of module.nest11.test.ts`,
    );
}

export interface NestAppSpec {
  imports?: (DynamicModule | Type)[];
  controllers?: Type[];
  providers?: Provider[];
  /** Express `trust proxy` / Fastify `trustProxy`. */
  trustProxy?: unknown;
  /** Runs on the app before it starts listening (global filters, middleware, hooks). */
  configure?(app: INestApplication): void;
  /** The app's logger (`NestFactory.create`'s `logger`). Default: none (false). */
  logger?: LoggerService;
}

export interface NestApp {
  readonly app: INestApplication;
  readonly url: string;
  request(path?: string, init?: RequestInit): Promise<TestResponse>;
  close(): Promise<void>;
}

/** Creates a Nest app on `platform` (not started). */
async function createNestApp(platform: Platform, spec: NestAppSpec): Promise<INestApplication> {
  @Module({ imports: spec.imports ?? [], controllers: spec.controllers ?? [], providers: spec.providers ?? [] })
  class RootModule {}
  const adapter =
    platform === 'express'
      ? new ExpressAdapter()
      : new FastifyAdapter(spec.trustProxy === undefined ? {} : { trustProxy: spec.trustProxy as boolean });
  const app = await NestFactory.create(RootModule, adapter, { logger: spec.logger ?? false, abortOnError: false });
  if (platform === 'express' && spec.trustProxy !== undefined)
    (app.getHttpAdapter().getInstance() as { set(name: string, value: unknown): void }).set(
      'trust proxy',
      spec.trustProxy,
    );
  spec.configure?.(app);
  return app;
}

/** A Nest app on Fastify served through Fastify's `inject()`, without a socket. */
export interface InjectedNestApp {
  readonly app: INestApplication;
  readonly inject: Inject;
  close(): Promise<void>;
}

/** Creates and starts a Nest app on Fastify without listening: its requests go through `inject()`. */
export async function startInjectedNestApp(spec: NestAppSpec): Promise<InjectedNestApp> {
  const app = await createNestApp('fastify', spec);
  const fastify = app.getHttpAdapter().getInstance() as { ready(): Promise<unknown>; inject: Inject };
  try {
    await app.init();
    await fastify.ready();
  } catch (error) {
    await app.close();
    throw error;
  }
  return { app, inject: fastify.inject.bind(fastify), close: () => app.close() };
}

/** Creates, starts and serves a Nest app on `platform`. */
export async function startNestApp(platform: Platform, spec: NestAppSpec): Promise<NestApp> {
  const app = await createNestApp(platform, spec);
  try {
    await app.listen(0, '127.0.0.1');
  } catch (error) {
    await app.close();
    throw error;
  }
  const server = app.getHttpServer() as import('node:http').Server;
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    app,
    url,
    request: (path, init) => request(url, path, init),
    async close() {
      server.closeAllConnections();
      await app.close();
    },
  };
}

/** The platform's request as the tests read it. */
export function requestPath(req: { raw?: unknown; url: string; path?: string }): string {
  return req.raw !== undefined ? req.url.split('?')[0]! : req.path!;
}
