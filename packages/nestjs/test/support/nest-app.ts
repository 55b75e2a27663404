/**
 * Real Nest apps for the tests, on either platform, listening on 127.0.0.1: a root module made of
 * the given imports, controllers and providers, created with `NestFactory` (no abort on a bad start:
 * the start rejects).
 */
import type { AddressInfo } from 'node:net';
import { Module, type DynamicModule, type INestApplication, type Provider, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { request, type Inject, type RequestInit, type TestResponse } from '@rl/test-support';

export type Platform = 'express' | 'fastify';
export const PLATFORMS: readonly Platform[] = ['express', 'fastify'];

export interface NestAppSpec {
  imports?: (DynamicModule | Type)[];
  controllers?: Type[];
  providers?: Provider[];
  /** Express `trust proxy` / Fastify `trustProxy`. */
  trustProxy?: unknown;
  /** Runs on the app before it starts listening (global filters, middleware, hooks). */
  configure?(app: INestApplication): void;
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
  const adapter = platform === 'express' ? new ExpressAdapter() : new FastifyAdapter(spec.trustProxy === undefined ? {} : { trustProxy: spec.trustProxy as boolean });
  const app = await NestFactory.create(RootModule, adapter, { logger: false, abortOnError: false });
  if (platform === 'express' && spec.trustProxy !== undefined) (app.getHttpAdapter().getInstance() as { set(name: string, value: unknown): void }).set('trust proxy', spec.trustProxy);
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
