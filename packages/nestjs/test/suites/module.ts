// What only Nest has, on both of its platforms: the module (forRoot, forRootAsync, the global guard or
// @UseGuards), the decorators (@RateLimit merged over the module's options, @SkipRateLimit,
// @CurrentRateLimit), the denial the guard sends (and onLimit's exceptions through Nest's filters), and
// the module's lifecycle. Registered by module.test.ts (Nest 12) and module.nest11.test.ts (Nest 11).
import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import {
  Catch,
  Controller,
  Get,
  HttpException,
  Inject,
  Injectable,
  Logger,
  Module,
  Post,
  Req,
  Scope,
  UseGuards,
  type ArgumentsHost,
  type ExceptionFilter,
  type ExecutionContext,
  type LoggerService,
} from '@nestjs/common';
import { APP_GUARD, REQUEST } from '@nestjs/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  createLimiter,
  fixedWindow,
  InvalidOptionError,
  tokenBucket,
  type RateLimitResult,
  type Store,
} from '@rl/core';
import { MemoryStore } from '@rl/store-memory';
import { captureWarnings, members, T0 } from '@rl/test-support';
import {
  createRateLimitGuard,
  CurrentRateLimit,
  getStorageToken,
  RateLimit,
  RateLimitException,
  RateLimitGuard,
  RateLimitModule,
  RateLimitService,
  SkipRateLimit,
} from '../../src/index.js';
import {
  NEST_MAJOR,
  PLATFORMS,
  startNestApp,
  type NestApp,
  type NestAppSpec,
  type Platform,
} from '../support/nest-app.js';

const clock = (): number => T0;
const perMinute = (limit: number) => fixedWindow({ limit, window: '1m' });

/** A Nest logger that keeps what it is told, `[level, message]`. */
function recordingLogger(): LoggerService & { readonly lines: [level: string, message: string][] } {
  const lines: [string, string][] = [];
  const keep = (level: string) => (message: unknown) => void lines.push([level, String(message)]);
  return {
    lines,
    log: keep('log'),
    error: keep('error'),
    warn: keep('warn'),
    debug: keep('debug'),
    verbose: keep('verbose'),
    fatal: keep('fatal'),
  };
}

describe.each(PLATFORMS)(`Nest ${NEST_MAJOR} on %s`, (platform: Platform) => {
  const opened: NestApp[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((app) => app.close()));
  });
  const open = async (spec: NestAppSpec): Promise<NestApp> => {
    const app = await startNestApp(platform, spec);
    opened.push(app);
    return app;
  };

  @Controller()
  class ItemsController {
    @Get('items')
    list(@CurrentRateLimit() limit: RateLimitResult | undefined) {
      return { remaining: limit?.remaining ?? null };
    }

    @Post('login')
    @RateLimit({ algorithm: perMinute(2) })
    login(@CurrentRateLimit() limit: RateLimitResult | undefined) {
      return { remaining: limit?.remaining ?? null };
    }

    @Get('health')
    @SkipRateLimit()
    health(@CurrentRateLimit() limit: RateLimitResult | undefined) {
      return { limited: limit !== undefined };
    }
  }

  @Controller()
  class ExportController {
    @Get('export')
    @RateLimit({ cost: 5 })
    exportAll(@CurrentRateLimit() limit: RateLimitResult | undefined) {
      return { remaining: limit?.remaining ?? null };
    }
  }

  /** Limited by `@UseGuards(RateLimitGuard)` on the controller: without `global`, the only guarded routes. */
  @Controller('guarded')
  @UseGuards(RateLimitGuard)
  class GuardedController {
    @Get()
    get(@CurrentRateLimit() limit?: RateLimitResult) {
      return { remaining: limit?.remaining ?? null };
    }
  }

  it("denies with 429, the RateLimit headers, Retry-After and a problem+json body, sent by the guard: no handler, no filter, nothing on Nest's logger", async () => {
    const logged = recordingLogger();
    const filtered: unknown[] = [];
    @Catch()
    class EveryError implements ExceptionFilter {
      catch(exception: unknown): void {
        filtered.push(exception);
      }
    }
    const handled = vi.fn();
    @Controller()
    class CountedController {
      @Get('items')
      list() {
        handled();
        return {};
      }
    }
    const app = await open({
      imports: [RateLimitModule.forRoot({ clock, algorithm: perMinute(2), global: true })],
      controllers: [CountedController],
      logger: logged,
      configure: (nest) => nest.useGlobalFilters(new EveryError()),
    });
    await app.request('/items');
    await app.request('/items');
    const denied = await app.request('/items');
    expect(handled).toHaveBeenCalledTimes(2);
    expect(filtered).toEqual([]);
    // Nest 11's Express adapter rewrote an exception's problem+json to application/json, with a warning each time.
    expect(logged.lines.filter(([level]) => level !== 'log')).toEqual([]);
    expect(denied.status).toBe(429);
    expect(denied.headers['content-type']).toBe(
      platform === 'express' ? 'application/problem+json' : 'application/problem+json; charset=utf-8',
    );
    expect(denied.headers['retry-after']).toBe('60');
    expect(members(denied.headers['ratelimit'])).toEqual([{ name: '2-in-1m', params: { r: 0, t: 60 } }]);
    expect(denied.headers['ratelimit-policy']).toBe('"2-in-1m";q=2;w=60');
    expect(denied.body).toEqual({
      type: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
      title: 'Request cannot be satisfied as assigned quota has been exceeded',
      status: 429,
      detail: 'Rate limit exceeded. Retry after 60 seconds.',
      'violated-policies': ['2-in-1m'],
      retryAfter: 60,
    });
  });

  it("@RateLimit({ cost }) spends the module's limit; @RateLimit({ algorithm }) is a limit of its own; @SkipRateLimit() is not limited", async () => {
    const app = await open({
      imports: [RateLimitModule.forRoot({ clock, algorithm: perMinute(10), global: true })],
      controllers: [ItemsController, ExportController],
    });
    expect((await app.request('/items')).body).toEqual({ remaining: 9 });
    expect((await app.request('/export')).body).toEqual({ remaining: 4 });
    expect((await app.request('/items')).body).toEqual({ remaining: 3 });
    // Its own state: the module's 3 left are untouched.
    const login = await app.request('/login', { method: 'POST' });
    expect(login.body).toEqual({ remaining: 1 });
    expect(members(login.headers['ratelimit'])).toEqual([{ name: '2-in-1m', params: { r: 1, t: 60 } }]);
    await app.request('/login', { method: 'POST' });
    expect((await app.request('/login', { method: 'POST' })).status).toBe(429);
    expect((await app.request('/items')).body).toEqual({ remaining: 2 });
    const health = await app.request('/health');
    expect(health.body).toEqual({ limited: false });
    expect(health.headers['ratelimit']).toBeUndefined();
    // A route's limit is built once, when the app starts: module + login (export spends the module's state through a limit of its own options).
    const service = app.app.get(RateLimitService);
    expect((service as unknown as { limiters: Set<unknown> }).limiters.size).toBe(3);
  });

  it("a controller's @RateLimit is one limit for its routes; a handler's options are merged over it; @SkipRateLimit(false) undoes a controller's skip", async () => {
    @Controller('a')
    @RateLimit({ algorithm: perMinute(3) })
    class LimitedController {
      @Get('one')
      one(@CurrentRateLimit() limit?: RateLimitResult) {
        return { remaining: limit?.remaining ?? null, limit: limit?.limit ?? null };
      }

      @Get('two')
      two(@CurrentRateLimit() limit?: RateLimitResult) {
        return { remaining: limit?.remaining ?? null };
      }

      @Get('dear')
      @RateLimit({ cost: 2 })
      dear(@CurrentRateLimit() limit?: RateLimitResult) {
        return { remaining: limit?.remaining ?? null };
      }
    }
    @Controller('b')
    @SkipRateLimit()
    class OpenController {
      @Get('open')
      open(@CurrentRateLimit() limit?: RateLimitResult) {
        return { limited: limit !== undefined };
      }

      @Get('closed')
      @SkipRateLimit(false)
      closed(@CurrentRateLimit() limit?: RateLimitResult) {
        return { limited: limit !== undefined };
      }
    }
    const app = await open({
      imports: [RateLimitModule.forRoot({ clock, algorithm: perMinute(100), global: true })],
      controllers: [LimitedController, OpenController],
    });
    expect((await app.request('/a/one')).body).toEqual({ remaining: 2, limit: 3 });
    expect((await app.request('/a/two')).body).toEqual({ remaining: 1 });
    expect((await app.request('/a/dear')).status).toBe(429);
    expect((await app.request('/a/two')).body).toEqual({ remaining: 0 });
    expect((await app.request('/b/open')).body).toEqual({ limited: false });
    expect((await app.request('/b/closed')).body).toEqual({ limited: true });
  });

  it('without global: only the routes under @UseGuards(RateLimitGuard) are limited', async () => {
    @Controller('free')
    class FreeController {
      @Get()
      get(@CurrentRateLimit() limit?: RateLimitResult) {
        return { remaining: limit?.remaining ?? null };
      }
    }
    const app = await open({
      imports: [RateLimitModule.forRoot({ clock, algorithm: perMinute(1) })],
      controllers: [GuardedController, FreeController],
    });
    expect((await app.request('/guarded')).body).toEqual({ remaining: 0 });
    expect((await app.request('/guarded')).status).toBe(429);
    expect((await app.request('/free')).body).toEqual({ remaining: null });
    expect((await app.request('/free')).status).toBe(200);
  });

  it('forRootAsync takes its options from a factory with injections; the result is on the request', async () => {
    @Injectable()
    class Settings {
      readonly requestsPerMinute = 2;
    }
    @Module({ providers: [Settings], exports: [Settings] })
    class SettingsModule {}
    const app = await open({
      imports: [
        RateLimitModule.forRootAsync({
          imports: [SettingsModule],
          inject: [Settings],
          useFactory: (settings: Settings) => ({ clock, algorithm: perMinute(settings.requestsPerMinute) }),
          global: true,
        }),
      ],
      controllers: [ItemsController],
    });
    expect((await app.request('/items')).body).toEqual({ remaining: 1 });
    expect((await app.request('/items')).headers['ratelimit-policy']).toBe('"2-in-1m";q=2;w=60');
    expect((await app.request('/items')).status).toBe(429);
  });

  it('onLimit returns the body of the denial (sent as JSON by the guard), or throws the exception to send; a filter catches a RateLimitException onLimit throws', async () => {
    const withBody = await open({
      imports: [
        RateLimitModule.forRoot({
          clock,
          algorithm: perMinute(1),
          global: true,
          onLimit: (_context, result) => ({ message: 'slow down', retryIn: result.retryAfterSeconds }),
        }),
      ],
      controllers: [ItemsController],
    });
    await withBody.request('/items');
    const denied = await withBody.request('/items');
    expect(denied.status).toBe(429);
    expect(denied.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(denied.body).toEqual({ message: 'slow down', retryIn: 60 });
    expect(denied.headers['retry-after']).toBe('60');

    const throwing = await open({
      imports: [
        RateLimitModule.forRoot({
          clock,
          algorithm: perMinute(1),
          global: true,
          onLimit: () => {
            throw new HttpException({ error: 'teapot' }, 418);
          },
        }),
      ],
      controllers: [ItemsController],
    });
    await throwing.request('/items');
    const teapot = await throwing.request('/items');
    expect(teapot.status).toBe(418);
    expect(teapot.body).toEqual({ error: 'teapot' });

    @Catch(RateLimitException)
    class DenialFilter implements ExceptionFilter {
      catch(exception: RateLimitException, host: ArgumentsHost): void {
        const res = host.switchToHttp().getResponse<{
          status(code: number): { send(body: unknown): void; json?(body: unknown): void };
          raw?: unknown;
          header(name: string, value: string): void;
        }>();
        res.header('content-type', 'text/plain');
        res.status(exception.getStatus()).send(`wait ${exception.result.retryAfterSeconds}s`);
      }
    }
    const filtered = await open({
      imports: [
        RateLimitModule.forRoot({
          clock,
          algorithm: perMinute(1),
          global: true,
          onLimit: (_context, result) => {
            throw new RateLimitException({ message: 'slow down' }, result);
          },
        }),
      ],
      controllers: [ItemsController],
      configure: (app) => app.useGlobalFilters(new DenialFilter()),
    });
    await filtered.request('/items');
    const plain = await filtered.request('/items');
    expect(plain.status).toBe(429);
    expect(plain.text).toBe('wait 60s');
    expect(plain.headers['ratelimit']).toBeDefined();
  });

  it('RateLimitService resets a key in every limit of the module', async () => {
    const app = await open({
      imports: [RateLimitModule.forRoot({ clock, algorithm: perMinute(2), global: true, key: () => 'user' })],
      controllers: [ItemsController],
    });
    await app.request('/items');
    await app.request('/login', { method: 'POST' });
    await app.request('/login', { method: 'POST' });
    expect((await app.request('/login', { method: 'POST' })).status).toBe(429);
    await app.app.get(RateLimitService).resetKey('user');
    expect((await app.request('/items')).body).toEqual({ remaining: 1 });
    expect((await app.request('/login', { method: 'POST' })).body).toEqual({ remaining: 1 });
  });

  it('closes the store it created when the app closes, and leaves a store it was given open', async () => {
    const close = vi.spyOn(MemoryStore.prototype, 'close');
    try {
      const given = new MemoryStore();
      const own = await startNestApp(platform, {
        imports: [RateLimitModule.forRoot({ clock, algorithm: perMinute(2), global: true })],
        controllers: [ItemsController],
      });
      const shared = await startNestApp(platform, {
        imports: [RateLimitModule.forRoot({ clock, store: given, algorithm: perMinute(2), global: true })],
        controllers: [ItemsController],
      });
      expect((await own.request('/login', { method: 'POST' })).status).toBe(201);
      close.mockClear();
      await own.close();
      expect(close).toHaveBeenCalledTimes(1);
      await shared.close();
      expect(close).toHaveBeenCalledTimes(1);
      expect(close.mock.contexts[0]).not.toBe(given);
      given.close();
    } finally {
      close.mockRestore();
    }
  });

  it('provides the store of its limits under getStorageToken(): by default a memory store of its own, closed when the app closes', async () => {
    const close = vi.spyOn(MemoryStore.prototype, 'close');
    try {
      const app = await startNestApp(platform, {
        imports: [RateLimitModule.forRoot({ clock, algorithm: perMinute(10), global: true })],
        controllers: [ItemsController, ExportController],
      });
      const store = app.app.get<Store>(getStorageToken());
      expect(store).toBeInstanceOf(MemoryStore);
      const service = app.app.get(RateLimitService);
      expect(service.limiter.limiters[0]!.store).toBe(store);
      // A @RateLimit limit of its own is on it too.
      expect((await app.request('/login', { method: 'POST' })).body).toEqual({ remaining: 1 });
      expect((service as unknown as { limiters: Set<{ limiters: { store: Store }[] }> }).limiters.size).toBe(3);
      for (const limiter of (service as unknown as { limiters: Set<{ limiters: { store: Store }[] }> }).limiters)
        expect(limiter.limiters[0]!.store).toBe(store);
      // Each app of one module makes a store of its own.
      const module = RateLimitModule.forRoot({ clock, algorithm: perMinute(10) });
      const [one, two] = await Promise.all([open({ imports: [module] }), open({ imports: [module] })]);
      expect(one.app.get(getStorageToken())).not.toBe(two.app.get(getStorageToken()));
      close.mockClear();
      await app.close();
      expect(close.mock.contexts).toEqual([store]);
    } finally {
      close.mockRestore();
    }
  });

  it("a provider of getStorageToken() in forRootAsync's extraProviders is the store of every limit, made from what it injects, and never closed by rl", async () => {
    const close = vi.spyOn(MemoryStore.prototype, 'close');
    const given = new MemoryStore();
    const CLIENT = Symbol('client');
    try {
      const app = await startNestApp(platform, {
        imports: [
          RateLimitModule.forRootAsync({
            global: true,
            useFactory: () => ({ clock, algorithm: perMinute(10) }),
            extraProviders: [
              { provide: CLIENT, useValue: { store: given } },
              { provide: getStorageToken(), inject: [CLIENT], useFactory: (client: { store: Store }) => client.store },
            ],
          }),
        ],
        controllers: [ItemsController, ExportController],
      });
      expect(app.app.get(getStorageToken())).toBe(given);
      expect(app.app.get(RateLimitService).limiter.limiters[0]!.store).toBe(given);
      expect((await app.request('/items')).body).toEqual({ remaining: 9 });
      expect((await app.request('/login', { method: 'POST' })).body).toEqual({ remaining: 1 });
      // The state is in the given store: a limiter of one's own on it, in the module's namespace, sees the module's count.
      const twin = createLimiter({
        clock,
        store: given,
        algorithm: perMinute(10),
        prefix: app.app.get(RateLimitService).limiter.prefix,
      });
      expect((await twin.peek('127.0.0.1')).remaining).toBe(9);
      await app.close();
      // No memory store was made, and the given one is left open.
      expect(close).not.toHaveBeenCalled();
    } finally {
      close.mockRestore();
      given.close();
    }
  });

  it('forRootAsync refuses a store in the options beside a provider of getStorageToken(), naming the option', async () => {
    const given = new MemoryStore();
    try {
      await expect(
        startNestApp(platform, {
          imports: [
            RateLimitModule.forRootAsync({
              useFactory: () => ({ algorithm: perMinute(2), store: given }),
              extraProviders: [{ provide: getStorageToken(), useValue: given }],
            }),
          ],
        }),
      ).rejects.toMatchObject({ code: 'RL_INVALID_OPTION', field: 'RateLimitModule.forRootAsync.store' });
      expect(() =>
        RateLimitModule.forRootAsync({ useFactory: () => ({ algorithm: perMinute(2) }), extraProviders: {} as never }),
      ).toThrowError(expect.objectContaining({ field: 'RateLimitModule.forRootAsync.extraProviders' }));
    } finally {
      given.close();
    }
  });

  it("a guard that overrides getTracker and onLimit keys and answers the limits it runs, on the module's state; a route's key option still wins", async () => {
    @Injectable()
    class UserGuard extends RateLimitGuard {
      protected override getTracker(req: { headers: Record<string, string | undefined> }): string | Promise<string> {
        return req.headers['x-user'] ?? super.getTracker(req);
      }

      protected override onLimit(_context: ExecutionContext, result: RateLimitResult): unknown {
        return { message: 'slow down', retryIn: result.retryAfterSeconds };
      }
    }
    @Controller()
    class SharedController {
      @Get('shared')
      @RateLimit({ key: () => 'everyone' })
      shared(@CurrentRateLimit() limit: RateLimitResult | undefined) {
        return { remaining: limit?.remaining ?? null };
      }
    }
    const app = await open({
      imports: [RateLimitModule.forRoot({ clock, algorithm: perMinute(2) })],
      controllers: [ItemsController, SharedController],
      providers: [{ provide: APP_GUARD, useClass: UserGuard }],
    });
    const as = (user?: string) => (user === undefined ? {} : { headers: { 'x-user': user } });
    expect((await app.request('/items', as('ann'))).body).toEqual({ remaining: 1 });
    expect((await app.request('/items', as('ann'))).body).toEqual({ remaining: 0 });
    const denied = await app.request('/items', as('ann'));
    expect(denied.status).toBe(429);
    expect(denied.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(denied.body).toEqual({ message: 'slow down', retryIn: 60 });
    expect((await app.request('/items', as('bob'))).body).toEqual({ remaining: 1 });
    // super.getTracker: the client IP, as the module's default key makes it.
    expect((await app.request('/items')).body).toEqual({ remaining: 1 });
    expect(
      app.app.get(RateLimitService).clientKey({ ip: '127.0.0.1', headers: {}, socket: { remoteAddress: '127.0.0.1' } }),
    ).toBe('127.0.0.1');
    // The route's key wins over the guard's: one key for ann and bob.
    expect((await app.request('/shared', as('ann'))).body).toEqual({ remaining: 1 });
    expect((await app.request('/shared', as('bob'))).body).toEqual({ remaining: 0 });
    // The module's state: its key controls reach the guard's limits.
    await app.app.get(RateLimitService).resetKey('ann');
    expect((await app.request('/items', as('ann'))).body).toEqual({ remaining: 1 });
  });

  it('a request-scoped guard (an instance per request) runs the limits built for its class, each request keyed and answered by its own instance', async () => {
    @Injectable({ scope: Scope.REQUEST })
    class TenantGuard extends RateLimitGuard {
      constructor(
        service: RateLimitService,
        @Inject(REQUEST) private readonly request: { headers: Record<string, string | undefined> },
      ) {
        super(service);
      }

      protected override getTracker(): string {
        return this.request.headers['x-tenant'] ?? 'none';
      }

      protected override onLimit(): unknown {
        return { tenant: this.request.headers['x-tenant'] };
      }
    }
    const app = await open({
      imports: [RateLimitModule.forRoot({ clock, algorithm: perMinute(2) })],
      controllers: [ItemsController],
      providers: [{ provide: APP_GUARD, useClass: TenantGuard }],
    });
    const service = app.app.get(RateLimitService) as unknown as { limiters: Set<unknown> };
    const as = (tenant: string) => ({ headers: { 'x-tenant': tenant } });
    expect((await app.request('/items', as('a'))).body).toEqual({ remaining: 1 });
    const limiters = service.limiters.size;
    for (let i = 0; i < 20; i++) await app.request('/items', as(i % 2 === 0 ? 'b' : 'c'));
    // One limit for the class, not one per request (each built one, and kept it).
    expect(service.limiters.size).toBe(limiters);
    expect((await app.request('/items', as('a'))).body).toEqual({ remaining: 0 });
    const denied = await app.request('/items', as('a'));
    expect([denied.status, denied.body]).toEqual([429, { tenant: 'a' }]);
    expect((await app.request('/items', as('b'))).body).toEqual({ tenant: 'b' });
  });

  it('a guard that extends RateLimitGuard and overrides nothing runs the limits as they are: no limit beside them', async () => {
    @Injectable()
    class PlainGuard extends RateLimitGuard {}
    const app = await open({
      imports: [RateLimitModule.forRoot({ clock, algorithm: perMinute(2) })],
      controllers: [ItemsController],
      providers: [{ provide: APP_GUARD, useClass: PlainGuard }],
    });
    expect((await app.request('/items')).body).toEqual({ remaining: 1 });
    expect((await app.request('/login', { method: 'POST' })).body).toEqual({ remaining: 1 });
    // The module's limit and login's, built at start: no limit per guard.
    expect((app.app.get(RateLimitService) as unknown as { limiters: Set<unknown> }).limiters.size).toBe(2);
  });

  it.runIf(platform === 'fastify')(
    `on Fastify, request.rateLimit is declared: null on a skipped route, the result on a limited one${platform === 'fastify' ? '' : ' (skipped: Fastify declares request properties, Express has no such declaration)'}`,
    async () => {
      @Controller('shape')
      class ShapeController {
        @Get('skipped')
        @SkipRateLimit()
        skipped(@Req() request: { rateLimit?: unknown }) {
          // Declared: null (an undeclared property would be undefined, left out of the JSON).
          return { value: request.rateLimit };
        }

        @Get('limited')
        limited(@Req() request: { rateLimit?: { remaining: number } }) {
          return { remaining: request.rateLimit?.remaining };
        }
      }
      const app = await open({
        imports: [RateLimitModule.forRoot({ clock, algorithm: perMinute(5), global: true })],
        controllers: [ShapeController],
      });
      expect((await app.request('/shape/skipped')).body).toEqual({ value: null });
      expect((await app.request('/shape/limited')).body).toEqual({ remaining: 4 });
    },
  );

  it('warns RL_DOUBLE_COUNT when the guard runs twice on a request (global, and @UseGuards on the controller)', async () => {
    await captureWarnings('RL_DOUBLE_COUNT', async (warnings) => {
      const app = await open({
        imports: [RateLimitModule.forRoot({ clock, algorithm: perMinute(10), global: true })],
        controllers: [GuardedController],
      });
      expect((await app.request('/guarded')).body).toEqual({ remaining: 8 });
      await app.request('/guarded');
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(/ran twice on one request/);
    });
  });

  it('lets a GraphQL, WebSocket or microservice context through unlimited, and says so once per kind (RL_UNLIMITED_CONTEXT)', async () => {
    await captureWarnings('RL_UNLIMITED_CONTEXT', async (warnings) => {
      const app = await open({
        imports: [RateLimitModule.forRoot({ clock, algorithm: perMinute(1), global: true })],
        controllers: [ItemsController],
      });
      const context = (type: string) => ({ getType: () => type }) as unknown as ExecutionContext;
      const guard = new RateLimitGuard(app.app.get(RateLimitService));
      const standalone = createRateLimitGuard({ clock, algorithm: perMinute(1) });
      for (const type of ['graphql', 'graphql', 'ws', 'rpc', 'graphql'])
        expect([guard.canActivate(context(type)), standalone.canActivate(context(type))]).toEqual([true, true]);
      expect(warnings).toHaveLength(6);
      expect(warnings[0]).toMatch(/a graphql context passed unlimited.*rateLimit\(\) on \/graphql/);
      await standalone.close();
    });
  });

  it("createRateLimitGuard is a second limit after the module's (both in the headers); @SkipRateLimit() skips it too", async () => {
    const exportsCap = createRateLimitGuard({ clock, limits: [{ name: 'exports', algorithm: perMinute(1) }] });
    @Controller('reports')
    class ReportsController {
      @Get('export')
      @UseGuards(exportsCap)
      exportAll(@CurrentRateLimit() limit?: RateLimitResult) {
        return { remaining: limit?.remaining ?? null };
      }

      @Get('free')
      @UseGuards(exportsCap)
      @SkipRateLimit()
      free(@CurrentRateLimit() limit?: RateLimitResult) {
        return { limited: limit !== undefined };
      }
    }
    try {
      const app = await open({
        imports: [RateLimitModule.forRoot({ clock, algorithm: perMinute(10), global: true })],
        controllers: [ReportsController],
      });
      const first = await app.request('/reports/export');
      expect(first.body).toEqual({ remaining: 0 });
      expect(members(first.headers['ratelimit'])).toEqual([
        { name: '10-in-1m', params: { r: 9, t: 60 } },
        { name: 'exports', params: { r: 0, t: 60 } },
      ]);
      const second = await app.request('/reports/export');
      expect(second.status).toBe(429);
      expect(second.body['violated-policies']).toEqual(['exports']);
      expect((await app.request('/reports/free')).body).toEqual({ limited: false });
    } finally {
      await exportsCap.close();
    }
  });

  it('RateLimitService.on hears the store failures of every limit, those of @RateLimit too', async () => {
    const failing = new MemoryStore();
    failing.charge = () => {
      throw new Error('store down');
    };
    const heard: string[] = [];
    @Controller('s')
    class StoreController {
      @Get('own')
      @RateLimit({ limits: [{ name: 'own', algorithm: perMinute(5) }], onStoreError: 'allow' })
      own() {
        return {};
      }
    }
    const app = await open({
      imports: [
        RateLimitModule.forRoot({
          clock,
          store: failing,
          algorithm: perMinute(5),
          global: true,
          logStoreErrors: false,
        }),
      ],
      controllers: [StoreController],
    });
    app.app.get(RateLimitService).on('storeError', (event) => heard.push(event.name));
    expect((await app.request('/s/own')).status).toBe(200);
    expect(heard).toEqual(['own']);
    failing.close();
  });
});

describe(`Nest ${NEST_MAJOR}'s logger`, () => {
  it('logs a failing store once per outage on the RateLimit logger, and nothing with logStoreErrors: false', async () => {
    @Controller()
    class RootController {
      @Get()
      root() {
        return {};
      }
    }
    const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const broken = new MemoryStore();
    broken.charge = () => {
      throw new Error('connection refused');
    };
    try {
      for (const platform of PLATFORMS) {
        warn.mockClear();
        const app = await startNestApp(platform, {
          imports: [RateLimitModule.forRoot({ store: broken, algorithm: perMinute(5), global: true })],
          controllers: [RootController],
        });
        try {
          for (let i = 0; i < 5; i++) expect((await app.request('/')).status).toBe(503);
          expect(warn).toHaveBeenCalledTimes(1);
          expect(String(warn.mock.calls[0]![0])).toMatch(
            /the store of limit "5-in-1m" failed .*requests are denied \(503\)/,
          );
        } finally {
          await app.close();
        }
        warn.mockClear();
        const quiet = await startNestApp(platform, {
          imports: [
            RateLimitModule.forRoot({ store: broken, algorithm: perMinute(5), global: true, logStoreErrors: false }),
          ],
          controllers: [RootController],
        });
        try {
          expect((await quiet.request('/')).status).toBe(503);
          expect(warn).not.toHaveBeenCalled();
        } finally {
          await quiet.close();
        }
      }
    } finally {
      warn.mockRestore();
      broken.close();
    }
  });
});

describe(`Nest ${NEST_MAJOR}: contexts other than HTTP`, () => {
  it('the guards let a WebSocket or microservice context pass, without reading a request', async () => {
    const service = new RateLimitService({ algorithm: perMinute(1) });
    const guard = new RateLimitGuard(service);
    const standalone = createRateLimitGuard({ algorithm: perMinute(1) });
    // No switchToHttp: a guard that reached for the request would throw.
    const context = {
      getType: () => 'rpc',
      getClass: () => Object,
      getHandler: () => Object,
    } as unknown as ExecutionContext;
    try {
      expect(guard.canActivate(context)).toBe(true);
      expect(standalone.canActivate(context)).toBe(true);
    } finally {
      await service.onApplicationShutdown();
      await standalone.close();
    }
  });
});

describe(`Nest ${NEST_MAJOR}: the package's peer ranges`, () => {
  /** The version of Nest's package `name` this file runs on (the `@nestjs/*11` alias on Nest 11). */
  const installed = (name: string): string =>
    (createRequire(import.meta.url)(`${name}${NEST_MAJOR === 11 ? '11' : ''}/package.json`) as { version: string })
      .version;
  /** Whether a range of caret alternatives (`^11.0.0 || ^12.0.0`, the only form the package uses) admits `version`. */
  const admits = (range: string, version: string): boolean =>
    range.split('||').some((alternative) => {
      const caret = /^\^(\d+)\.(\d+)\.(\d+)$/.exec(alternative.trim());
      if (!caret) throw new Error(`not a caret range: ${alternative}`);
      const [major, minor, patch] = version.split('.').map(Number);
      const [, wantMajor, wantMinor, wantPatch] = caret.map(Number);
      return major === wantMajor && (minor! > wantMinor! || (minor === wantMinor && patch! >= wantPatch!));
    });

  it('admit the Nest these tests run on (npm refuses to install @rl/nestjs beside a Nest they do not: ERESOLVE)', () => {
    const { peerDependencies } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      peerDependencies: Record<string, string>;
    };
    for (const name of ['@nestjs/common', '@nestjs/core']) {
      expect(Number(installed(name).split('.')[0])).toBe(NEST_MAJOR);
      expect(
        admits(peerDependencies[name]!, installed(name)),
        `${name} ${peerDependencies[name]} admits ${installed(name)}`,
      ).toBe(true);
    }
  });
});

describe(`Nest ${NEST_MAJOR}: bad options`, () => {
  it('RateLimitModule.forRoot checks its options at once, naming the field, with the peer option hint', () => {
    expect(() => RateLimitModule.forRoot({ algorithm: perMinute(5), windowMs: 60_000 } as never)).toThrowError(
      expect.objectContaining({
        code: 'RL_INVALID_OPTION',
        field: 'RateLimitModule.forRoot.windowMs',
        message: expect.stringContaining('fixedWindow'),
      }),
    );
    expect(() => RateLimitModule.forRoot({ algorithm: perMinute(5), ttl: 60_000 } as never)).toThrowError(
      expect.objectContaining({
        field: 'RateLimitModule.forRoot.ttl',
        message: expect.stringContaining('@nestjs/throttler'),
      }),
    );
    expect(() => RateLimitModule.forRoot({ algorithm: perMinute(5), global: 'yes' } as never)).toThrowError(
      expect.objectContaining({ field: 'RateLimitModule.forRoot.global' }),
    );
    expect(() => RateLimitModule.forRoot({ algorithm: perMinute(5), cost: 6 })).toThrowError(
      expect.objectContaining({ code: 'RL_COST_EXCEEDS_CAPACITY' }),
    );
  });

  it.each(PLATFORMS)(
    'on %s, two controllers of one name whose limits would share a namespace under the module prefix stop the app, naming it',
    async (platform) => {
      const version = (path: string) => {
        @Controller(path)
        class UsersController {
          @Get()
          @RateLimit({ algorithm: perMinute(1) })
          find() {
            return {};
          }
        }
        return UsersController;
      };
      const [v1, v2] = [version('v1/users'), version('v2/users')];
      const start = (prefix?: string) =>
        startNestApp(platform, {
          imports: [RateLimitModule.forRoot({ algorithm: perMinute(5), global: true, ...(prefix && { prefix }) })],
          controllers: [v1, v2],
        });
      await expect(start('app')).rejects.toMatchObject({
        code: 'RL_INVALID_OPTION',
        field: 'UsersController.find @RateLimit.prefix',
        message: expect.stringContaining('app:UsersController.find'),
      });
      // Without a module prefix each has a default namespace of its own.
      const app = await start();
      expect((await app.request('/v1/users')).status).toBe(200);
      expect((await app.request('/v2/users')).status).toBe(200);
      await app.close();
    },
  );

  it('@RateLimit checks its option names when the class is defined', () => {
    expect(() => RateLimit({ limit: 5 } as never)).toThrowError(expect.objectContaining({ field: '@RateLimit.limit' }));
    expect(() => RateLimit(null as never)).toThrowError(InvalidOptionError);
    // `global` is the module's: a route cannot change where the guard applies.
    expect(() => RateLimit({ global: true } as never)).toThrowError(
      expect.objectContaining({ field: '@RateLimit.global' }),
    );
    expect(() => SkipRateLimit('yes' as never)).toThrowError(expect.objectContaining({ field: '@SkipRateLimit' }));
  });

  it.each(PLATFORMS)(
    'on %s, bad @RateLimit values and bad forRootAsync options stop the app from starting, naming the route',
    async (platform) => {
      @Controller()
      class BadController {
        @Get('x')
        @RateLimit({ cost: 0 })
        x() {
          return {};
        }
      }
      await expect(
        startNestApp(platform, {
          imports: [RateLimitModule.forRoot({ algorithm: tokenBucket({ capacity: 5, refillRate: 1 }), global: true })],
          controllers: [BadController],
        }),
      ).rejects.toMatchObject({
        code: 'RL_INVALID_OPTION',
        field: 'BadController.x @RateLimit.cost',
      });
      await expect(
        startNestApp(platform, {
          imports: [RateLimitModule.forRootAsync({ useFactory: () => ({ algorithm: perMinute(5), max: 5 }) as never })],
        }),
      ).rejects.toMatchObject({
        code: 'RL_INVALID_OPTION',
        field: 'RateLimitModule.forRootAsync.max',
      });
      await expect(
        startNestApp(platform, {
          imports: [
            RateLimitModule.forRootAsync({ useFactory: () => ({ algorithm: perMinute(5), global: true }) as never }),
          ],
        }),
      ).rejects.toMatchObject({
        code: 'RL_INVALID_OPTION',
        field: 'RateLimitModule.forRootAsync.global',
      });
    },
  );
});
