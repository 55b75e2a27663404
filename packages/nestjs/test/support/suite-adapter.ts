/**
 * The shared adapter suite's `Adapter` for Nest on one platform: the suite's first middleware is the
 * module's limit (`RateLimitModule.forRoot({ ...options, global: true })`, the app-wide guard), each
 * further one a guard of its own (`createRateLimitGuard(options)`) on the controller, so they run in
 * the suite's order (global guards first). One controller answers every path and method.
 */
import {
  All,
  ArgumentsHost,
  Catch,
  Controller,
  HttpException,
  Req,
  Res,
  UseGuards,
  type ExceptionFilter,
  type INestApplication,
} from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import { headersOf, injectClient, statusOf, type Adapter, type MountedApp, type RequestView } from '@rl/test-support';
import { createRateLimitGuard, RateLimitModule, RateLimitService, type RateLimitOptions } from '../../src/index.js';
import { nestName, startInjectedNestApp, startNestApp, type NestAppSpec, type Platform } from './nest-app.js';

type AnyRequest = {
  raw?: unknown;
  url: string;
  originalUrl?: string;
  path?: string;
  headers: Record<string, string | string[] | undefined>;
  rateLimit?: { remaining: number } | null;
};

export const view = (req: AnyRequest): RequestView => {
  const url = req.raw !== undefined ? req.url : req.originalUrl!;
  return {
    path: url.split('?')[0]!,
    url,
    header: (name) => {
      const value = req.headers[name.toLowerCase()];
      return Array.isArray(value) ? value.join(', ') : value;
    },
    rateLimit: req.rateLimit ?? undefined,
  };
};

/** Errors that are not Nest's HTTP exceptions answer 500 `{ error, code }` (the suite's error handler); the rest as Nest does. */
@Catch()
export class ErrorsAsJson implements ExceptionFilter {
  constructor(private readonly base: BaseExceptionFilter) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    if (exception instanceof HttpException) return this.base.catch(exception, host);
    const e = exception as (Error & { code?: string }) | undefined;
    const res = host.switchToHttp().getResponse<{
      status(code: number): { send(body: unknown): void; json?(body: unknown): void };
      raw?: unknown;
    }>();
    const body = { error: e?.message, code: e?.code };
    const sending = res.status(500);
    if (res.raw !== undefined) sending.send(body);
    else sending.json!(body);
  }
}

export function errorsAsJson(app: INestApplication): void {
  app.useGlobalFilters(new ErrorsAsJson(new BaseExceptionFilter(app.getHttpAdapter())));
}

const TRUST = {
  express: { true: 1, addresses: 'loopback', all: true },
  fastify: { true: '127.0.0.1', addresses: '127.0.0.1', all: true },
} as const;

/** Nest on `platform`, listening on a socket, or (on Fastify) served through `inject()`. */
export function nestAdapter(platform: Platform, served: 'socket' | 'inject' = 'socket'): Adapter {
  const injected = served === 'inject';
  if (injected && platform !== 'fastify') throw new Error("inject() is Fastify's");
  return {
    name: `${nestName(platform)}${injected ? ' through inject()' : ''}`,
    owner: 'RateLimitModule.forRoot',
    inject: injected,
    async mount(spec) {
      const [first, ...rest] = spec.middlewares;
      const module = RateLimitModule.forRoot({ ...(first as RateLimitOptions), global: true });
      const extra = rest.map((options) => createRateLimitGuard(options as RateLimitOptions));

      @Controller()
      @UseGuards(...extra)
      class SuiteController {
        // Every path: Fastify's wildcard, path-to-regexp's on Express 5.
        @All(platform === 'fastify' ? ['/', '*'] : ['/', '{*path}'])
        async handle(
          @Req() req: AnyRequest,
          @Res()
          res: {
            header(name: string, value: string): unknown;
            status(code: number): { send(body: unknown): void; json?(body: unknown): void };
          },
        ): Promise<void> {
          const answer = await spec.handler?.(view(req));
          for (const [name, value] of Object.entries(headersOf(answer))) res.header(name, value);
          const body = { remaining: req.rateLimit?.remaining ?? null };
          const sending = res.status(statusOf(answer));
          if (platform === 'fastify') sending.send(body);
          else sending.json!(body);
        }
      }

      const trustProxy = spec.trustProxy
        ? TRUST[platform][spec.trustProxy === true ? 'true' : spec.trustProxy]
        : undefined;
      let nest: { readonly app: INestApplication; close(): Promise<void> } & Pick<
        MountedApp,
        'url' | 'request' | 'start'
      >;
      try {
        const nestSpec: NestAppSpec = {
          imports: [module],
          controllers: [SuiteController],
          trustProxy,
          configure(app) {
            errorsAsJson(app);
            const onArrival = spec.onArrival;
            if (onArrival === undefined) return;
            const instance = app.getHttpAdapter().getInstance() as {
              addHook?(
                name: 'onRequest',
                hook: (
                  request: AnyRequest,
                  reply: { raw: import('node:http').ServerResponse },
                  done: () => void,
                ) => void,
              ): void;
            };
            if (platform === 'fastify') {
              instance.addHook!('onRequest', (request, reply, done) => {
                onArrival(view(request), reply.raw);
                done();
              });
            } else {
              app.use((req: AnyRequest, res: import('node:http').ServerResponse, next: () => void) => {
                onArrival(view(req), res);
                next();
              });
            }
          },
        };
        if (injected) {
          const started = await startInjectedNestApp(nestSpec);
          nest = { ...started, ...injectClient(started.inject) };
        } else nest = await startNestApp(platform, nestSpec);
      } catch (error) {
        await Promise.all(extra.map((guard) => guard.close()));
        throw error;
      }
      const service = nest.app.get(RateLimitService);
      return {
        url: nest.url,
        request: nest.request,
        ...(nest.start !== undefined && { start: nest.start }),
        peek: (key) => service.limiter.limiters[0]!.peek(key),
        controls: service,
        async close() {
          await nest.close();
          await Promise.all(extra.map((guard) => guard.close()));
        },
      };
    },
    view: (req) => view(req as AnyRequest),
    responseHeader: (args, name) => {
      const value = (args[1] as { getHeader(name: string): unknown }).getHeader(name);
      return value === undefined ? undefined : String(value);
    },
    // Outages go to Nest's logger (module.test.ts checks it).
    logsToConsole: false,
    onLimitSending: (body) => (_context: unknown, result: { retryAfterSeconds: number }) => body(result),
    // The namespace the module's limit takes (the service builds it; the module builds one per app).
    namespaceOf: (options) => {
      const service = new RateLimitService(options as RateLimitOptions);
      void service.onApplicationShutdown();
      return service.limiter.prefix;
    },
  };
}
