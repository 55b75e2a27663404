import { Module, type DynamicModule, type FactoryProvider, type ModuleMetadata, type Provider } from '@nestjs/common';
import { APP_GUARD, DiscoveryModule, DiscoveryService, HttpAdapterHost } from '@nestjs/core';
import { InvalidOptionError } from '@rl/core';
import { checkOptionNames, PrefixRegistry } from '@rl/core/http';
import { NestLimit } from './nest-limit.js';
import type { RateLimitModuleOptions } from './options.js';
import { RateLimitGuard } from './rate-limit-guard.js';
import { MODULE_OWNER, RateLimitService } from './rate-limit-service.js';

/** Injection token of the module's options (as `forRoot` got them, or `forRootAsync`'s factory returned them). */
export const RATE_LIMIT_MODULE_OPTIONS = Symbol('rl:module-options');

/** The options of `RateLimitModule.forRootAsync`: a factory of the module's options, with its imports and injections. */
export interface RateLimitModuleAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  /** Returns the module's options (all but `global`, which is given here); what it injects is `inject`. */
  useFactory: (...args: never[]) => Omit<RateLimitModuleOptions, 'global'> | Promise<Omit<RateLimitModuleOptions, 'global'>>;
  inject?: FactoryProvider['inject'];
  /** As in `forRoot`: register the guard app-wide (`APP_GUARD`). Default false. */
  global?: boolean;
}

/**
 * rl for Nest: `imports: [RateLimitModule.forRoot({ algorithm: tokenBucket({ capacity: 20, refillRate: 10 }), global: true })]`.
 *
 * A global module (register it once, in the root module) providing {@link RateLimitGuard} (the
 * guard; app-wide with `global: true`) and {@link RateLimitService} (the limits' handle). The store
 * is given once, here: a memory store by default (one for the module's limit and every `@RateLimit`
 * one), a `RedisStore` for several instances. The module's limit, its `@RateLimit` limits and the
 * store it created live as long as the app (closed by `app.close()`).
 */
@Module({})
export class RateLimitModule {
  /**
   * The module with `options`, checked now: an `InvalidOptionError` naming `RateLimitModule.forRoot.<field>` (a
   * peer library's option name says its rl equivalent) before the app exists. Each app built from it
   * gets its own limits and store (two test apps of one root module share nothing but a store given here).
   */
  static forRoot(options: RateLimitModuleOptions): DynamicModule {
    const guard = checkGlobal(options?.global, `${MODULE_OWNER}.global`);
    checkOptions(options, MODULE_OWNER);
    return moduleWith({ provide: RATE_LIMIT_MODULE_OPTIONS, useValue: options }, guard, [], MODULE_OWNER);
  }

  /**
   * The module with options made by `useFactory` (from a config service, say), when the app starts;
   * bad options then fail the start (`NestFactory.create` rejects with the `InvalidOptionError`).
   */
  static forRootAsync(options: RateLimitModuleAsyncOptions): DynamicModule {
    if (typeof options?.useFactory !== 'function') throw new InvalidOptionError(`${ASYNC_OWNER}.useFactory`, options?.useFactory, 'a function returning the module options');
    const guard = checkGlobal(options.global, `${ASYNC_OWNER}.global`);
    const factory = options.useFactory as (...args: unknown[]) => RateLimitModuleOptions | Promise<RateLimitModuleOptions>;
    return moduleWith(
      {
        provide: RATE_LIMIT_MODULE_OPTIONS,
        inject: options.inject ?? [],
        useFactory: async (...args: unknown[]) => {
          const made = await factory(...args);
          if (Array.isArray(made)) checkOptionNames(made, ASYNC_OWNER, []);
          if (made?.global !== undefined) throw new InvalidOptionError(`${ASYNC_OWNER}.global`, made.global, 'give global to RateLimitModule.forRootAsync itself, beside useFactory');
          return made;
        },
      },
      guard,
      options.imports ?? [],
      ASYNC_OWNER,
    );
  }
}

/** Names the options `forRootAsync`'s factory made in errors. */
const ASYNC_OWNER = 'RateLimitModule.forRootAsync';

function moduleWith(optionsProvider: Provider, global: boolean, imports: NonNullable<ModuleMetadata['imports']>, owner: string): DynamicModule {
  const providers: Provider[] = [
    optionsProvider,
    {
      provide: RateLimitService,
      inject: [RATE_LIMIT_MODULE_OPTIONS, DiscoveryService, HttpAdapterHost],
      useFactory: (options: RateLimitModuleOptions, discovery: DiscoveryService, adapterHost: HttpAdapterHost) => new RateLimitService(options, discovery, owner, adapterHost),
    },
    RateLimitGuard,
  ];
  if (global) providers.push({ provide: APP_GUARD, useExisting: RateLimitGuard });
  return { module: RateLimitModule, global: true, imports: [...imports, DiscoveryModule], providers, exports: [RateLimitService, RateLimitGuard] };
}

function checkGlobal(value: unknown, field: string): boolean {
  if (value !== undefined && typeof value !== 'boolean') throw new InvalidOptionError(field, value, 'true (the guard limits every route) or false (@UseGuards(RateLimitGuard) where you want it)');
  return value === true;
}

/**
 * Checks the module's options as the app will build them, now: a limit built on a registry of its
 * own (it takes no namespace from the process's), without its observer (which would hear of a limit
 * that never runs) and closed at once.
 */
function checkOptions(options: RateLimitModuleOptions, owner: string): void {
  if (options === null || typeof options !== 'object') throw new InvalidOptionError(owner, options, 'the module options, for example { algorithm: tokenBucket({ capacity: 20, refillRate: 10 }) }');
  // An array (@nestjs/throttler's forRoot([{ ttl, limit }])) is refused as itself, before the spread below makes it { 0: … }.
  if (Array.isArray(options)) checkOptionNames(options, owner, []);
  const { global: _global, ...limitOptions } = options;
  const trial = new NestLimit({ ...limitOptions, observer: undefined, logStoreErrors: false }, owner, undefined, new PrefixRegistry());
  void trial.close();
}
