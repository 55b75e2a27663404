import 'reflect-metadata';
import {
  Controller,
  Get,
  Header,
  Headers,
  HttpCode,
  Inject,
  Injectable,
  Module,
  Post,
  UnauthorizedException,
  type DynamicModule,
  type INestApplication,
  type LogLevel,
  type MiddlewareConsumer,
  type NestMiddleware,
  type NestModule,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  concurrency,
  fixedWindow,
  tokenBucket,
  type Clock,
  type Duration,
  type RateLimitResult,
  type Store,
} from '@rl/core';
import { CurrentRateLimit, RateLimit, RateLimitModule, SkipRateLimit } from '@rl/nestjs';
import { prometheusObserver } from '@rl/prometheus';
import { Registry } from 'prom-client';

/** The limits of this example, in one place (the README and the tests read them from here). */
export const LIMITS = {
  /** Every client IP: a token bucket of 20 tokens refilled at 10 per second. */
  perIp: { capacity: 20, refillRate: 10 },
  /** Each API key on /api: 10 requests per minute. */
  perApiKey: { limit: 10, window: '1m' },
  /** What GET /export costs from the per-IP bucket. */
  exportCost: 5,
  /** Requests to GET /slow in flight at once per client IP. */
  slowConcurrency: 2,
  /** POST /login: 5 failed attempts per 15 minutes per IP (successful ones are not counted), then a 1-hour block. */
  login: { limit: 5, window: '15m', block: '1h' },
} as const;

/** The password POST /login accepts (header `x-password`; a real app checks a hash). */
export const DEMO_PASSWORD = 'demo';

/**
 * This app's namespace in the store: on a Redis shared with other apps (the other examples among
 * them), its counts are its own. Every instance of this app uses the same, so they share each limit.
 */
const PREFIX = 'example-nestjs';

/** The demo API keys accepted on /api (a real app looks them up). */
export const API_KEYS: ReadonlySet<string> = new Set(['key-alice', 'key-bob']);

/** The per-IP bucket: the module's limit, listed again by the routes that add a limit of their own. */
const perIp = tokenBucket(LIMITS.perIp);

/** The token of the work GET /slow does (`AppOptions.slowWork`). */
const SLOW_WORK = 'SLOW_WORK';

type RequestHeaders = Record<string, string | string[] | undefined>;

export interface AppOptions {
  /** Where every limit keeps its state. Default: a memory store the module creates (and closes with the app). */
  store?: Store;
  /** Time source of every limit. Default: the store's clock (Redis `TIME` on Redis). Tests pass a frozen clock. */
  clock?: Clock;
  /** Longest wait for a remote store before the failure policy (deny: 503) applies. Default: the library's (50 ms). */
  storeTimeout?: Duration;
  /** The work done by GET /slow. Default: wait `slowMs`. */
  slowWork?: () => Promise<void>;
  /** How long GET /slow takes by default (ms). Default 2000. */
  slowMs?: number;
  /** Nest's logger: the levels to print, or false. Default false. */
  logger?: LogLevel[] | false;
}

@Controller()
class ExampleController {
  constructor(@Inject(SLOW_WORK) private readonly slowWork: () => Promise<void>) {}

  // 1. Every route spends the module's per-IP bucket (see AppModule); the handler reads its result.
  @Get()
  hello(@CurrentRateLimit() limit: RateLimitResult | undefined) {
    return { hello: 'world', remaining: limit?.remaining };
  }

  // 2. /export is expensive: it takes 5 tokens of the caller's bucket (options merged over the module's).
  @Get('export')
  @RateLimit({ cost: LIMITS.exportCost })
  exportAll() {
    return { export: 'ok', rows: 1000 };
  }

  // 3. At most 2 requests to /slow in flight per IP. A route's `limits` replace the module's limit for
  //    that route, so the per-IP bucket is listed again (same prefix and name: the same state).
  @Get('slow')
  @RateLimit({
    prefix: PREFIX,
    limits: [{ algorithm: perIp }, { algorithm: concurrency({ limit: LIMITS.slowConcurrency, lease: '30s' }) }],
  })
  async slow() {
    await this.slowWork();
    return { slow: 'done' };
  }

  // 5. Brute-force protection: only failed logins count (a 401), and the 5th in 15 minutes blocks the IP
  //    for an hour, in the store, so every instance sees it. The route's own algorithm replaces the
  //    module's limit here (a lockout on the per-IP bucket would block every route). The password comes
  //    in `x-password`.
  @Post('login')
  @HttpCode(200)
  @RateLimit({
    algorithm: fixedWindow({ limit: LIMITS.login.limit, window: LIMITS.login.window }),
    prefix: `${PREFIX}:login`,
    skipSuccessfulRequests: true,
    blockDuration: LIMITS.login.block,
  })
  login(@Headers('x-password') password: string | undefined) {
    if (password === DEMO_PASSWORD) return { login: 'ok' };
    throw new UnauthorizedException({ login: 'wrong password' });
  }
}

// 4. /api needs an API key (x-api-key, checked by RequireApiKey, a middleware: it runs before the
//    guards, so a 401 counts nowhere) and allows 10 requests per minute per key, whatever the IP.
@Controller('api')
@RateLimit({
  prefix: PREFIX,
  limits: [
    { algorithm: perIp },
    {
      algorithm: fixedWindow(LIMITS.perApiKey),
      key: (req: { headers: RequestHeaders }) => `api-key:${req.headers['x-api-key']}`,
    },
  ],
})
class ApiController {
  @Get('items')
  items(@Headers('x-api-key') apiKey: string) {
    return { items: ['a', 'b', 'c'], apiKey };
  }
}

// Prometheus scrapes here, unlimited.
@Controller('metrics')
@SkipRateLimit()
class MetricsController {
  constructor(@Inject(Registry) private readonly registry: Registry) {}

  @Get()
  @Header('Content-Type', Registry.PROMETHEUS_CONTENT_TYPE)
  metrics(): Promise<string> {
    return this.registry.metrics();
  }
}

@Injectable()
class RequireApiKey implements NestMiddleware {
  use(req: { headers: RequestHeaders }, _res: unknown, next: () => void): void {
    const apiKey = req.headers['x-api-key'];
    if (typeof apiKey === 'string' && API_KEYS.has(apiKey)) return next();
    throw new UnauthorizedException('Send a valid x-api-key header.');
  }
}

@Module({})
class AppModule implements NestModule {
  /** The app's module: its limits (on `options.store`, in `options.clock`'s time), controllers and metrics. */
  static forRoot(options: AppOptions): DynamicModule {
    // The app's metrics, served on GET /metrics (one registry per app).
    const registry = new Registry();
    const slowMs = options.slowMs ?? 2000;
    return {
      module: AppModule,
      imports: [
        // The module's limit: one token bucket per client IP (the default key), for every route (global:
        // true), with the options every limit of the app shares; the store is given here once.
        RateLimitModule.forRoot({
          algorithm: perIp,
          prefix: `${PREFIX}:${perIp.policy.name}`,
          observer: prometheusObserver({ registry }),
          global: true,
          ...(options.store && { store: options.store }),
          ...(options.clock && { clock: options.clock }),
          ...(options.storeTimeout !== undefined && { timeout: options.storeTimeout }),
        }),
      ],
      controllers: [ExampleController, ApiController, MetricsController],
      providers: [
        { provide: Registry, useValue: registry },
        {
          provide: SLOW_WORK,
          useValue: options.slowWork ?? (() => new Promise<void>((resolve) => setTimeout(resolve, slowMs))),
        },
      ],
    };
  }

  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(RequireApiKey).forRoutes(ApiController);
  }
}

/** Creates the Nest app on Express (Nest's default platform). It does not listen: see `server.ts`, or call `app.listen(0)` in a test. */
export function createApp(options: AppOptions = {}): Promise<INestApplication> {
  // abortOnError: false: a start that fails rejects (bad options name their field) instead of exiting the process.
  return NestFactory.create(AppModule.forRoot(options), { logger: options.logger ?? false, abortOnError: false });
}
