import { Module, type DynamicModule, type FactoryProvider, type ModuleMetadata, type Provider } from '@nestjs/common';
import { APP_GUARD, DiscoveryModule, DiscoveryService, HttpAdapterHost } from '@nestjs/core';
import { InvalidOptionError, type Store } from '@rl/core';
import { checkOptionNames, PrefixRegistry, type DefaultStore } from '@rl/core/http';
import { NestLimit } from './nest-limit.js';
import type { RateLimitModuleOptions } from './options.js';
import { RateLimitGuard } from './rate-limit-guard.js';
import { MODULE_OWNER, RateLimitService, type RateLimitServiceSetting } from './rate-limit-service.js';
import { DEFAULT_STORE, getStorageToken, providesStore, storeProviders } from './storage.js';

/** Injection token of the module's options (as `forRoot` got them, or `forRootAsync`'s factory returned them). */
export const RATE_LIMIT_MODULE_OPTIONS = Symbol('rl:module-options');

/** The options of `RateLimitModule.forRootAsync`: a factory of the module's options, with its imports and injections. */
export interface RateLimitModuleAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  /** Returns the module's options (all but `global`, which is given here); what it injects is `inject`. */
  useFactory: (
    ...args: never[]
  ) => Omit<RateLimitModuleOptions, 'global'> | Promise<Omit<RateLimitModuleOptions, 'global'>>;
  inject?: FactoryProvider['inject'];
  /** As in `forRoot`: register the guard app-wide (`APP_GUARD`). Default false. */
  global?: boolean;
  /**
   * Providers added to the module (what `useFactory` injects, say). A provider of `getStorageToken()`
   * among them is the store of the module's limits, in place of the options' `store` (which must then
   * be left out) and of the default memory store: `{ provide: getStorageToken(), inject: [REDIS],
   * useFactory: (redis: Redis) => new RedisStore({ client: redis, prefix: 'my-app' }) }`. That store is
   * yours: rl never closes it.
   */
  extraProviders?: Provider[];
}

/**
 * rl for Nest: `imports: [RateLimitModule.forRoot({ algorithm: tokenBucket({ capacity: 20, refillRate: 10 }), global: true })]`.
 *
 * A global module (register it once, in the root module) providing {@link RateLimitGuard} (the
 * guard; app-wide with `global: true`) and {@link RateLimitService} (the limits' handle), and the
 * store of its limits under `getStorageToken()`. The store is given once, here: a memory store by
 * default (one for the module's limit and every `@RateLimit` one), a `RedisStore` for several
 * instances (in the options, or by a provider: see `getStorageToken`). The module's limit, its
 * `@RateLimit` limits and the store it created live as long as the app (closed by `app.close()`).
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
    return moduleWith(
      { provide: RATE_LIMIT_MODULE_OPTIONS, useValue: options },
      { global: guard, imports: [], extraProviders: [], owner: MODULE_OWNER },
    );
  }

  /**
   * The module with options made by `useFactory` (from a config service, say), when the app starts;
   * bad options then fail the start (`NestFactory.create` rejects with the `InvalidOptionError`).
   */
  static forRootAsync(options: RateLimitModuleAsyncOptions): DynamicModule {
    if (typeof options?.useFactory !== 'function')
      throw new InvalidOptionError(
        `${ASYNC_OWNER}.useFactory`,
        options?.useFactory,
        'a function returning the module options',
      );
    const guard = checkGlobal(options.global, `${ASYNC_OWNER}.global`);
    const factory = options.useFactory as (
      ...args: unknown[]
    ) => RateLimitModuleOptions | Promise<RateLimitModuleOptions>;
    const extraProviders = options.extraProviders ?? [];
    if (!Array.isArray(extraProviders))
      throw new InvalidOptionError(`${ASYNC_OWNER}.extraProviders`, extraProviders, 'an array of providers');
    const storeProvided = extraProviders.some(providesStore);
    return moduleWith(
      {
        provide: RATE_LIMIT_MODULE_OPTIONS,
        inject: options.inject ?? [],
        useFactory: async (...args: unknown[]) => {
          const made = await factory(...args);
          if (Array.isArray(made)) checkOptionNames(made, ASYNC_OWNER, []);
          if (made?.global !== undefined)
            throw new InvalidOptionError(
              `${ASYNC_OWNER}.global`,
              made.global,
              'give global to RateLimitModule.forRootAsync itself, beside useFactory',
            );
          if (storeProvided && made?.store !== undefined) {
            throw new InvalidOptionError(
              `${ASYNC_OWNER}.store`,
              made.store,
              'no store: a provider of getStorageToken() in extraProviders gives the store',
            );
          }
          return made;
        },
      },
      { global: guard, imports: options.imports ?? [], extraProviders, owner: ASYNC_OWNER },
    );
  }
}

/** Names the options `forRootAsync`'s factory made in errors. */
const ASYNC_OWNER = 'RateLimitModule.forRootAsync';

/** Injection token of what the module gives its service besides the options and the store. */
const SERVICE_SETTING = Symbol('rl:service-setting');

/** How `forRoot` or `forRootAsync` makes the module, besides its options' provider. */
interface ModuleSetting {
  /** Register the guard app-wide. */
  readonly global: boolean;
  readonly imports: NonNullable<ModuleMetadata['imports']>;
  readonly extraProviders: readonly Provider[];
  /** Names the options in errors. */
  readonly owner: string;
}

/**
 * The module: its options, its store (see `getStorageToken`: the options' `store`, a provider of
 * `extraProviders`, else a memory store of its own), the service built on them, the guard.
 */
function moduleWith(optionsProvider: Provider, setting: ModuleSetting): DynamicModule {
  const { owner } = setting;
  const providers: Provider[] = [
    optionsProvider,
    ...storeProviders(RATE_LIMIT_MODULE_OPTIONS, setting.extraProviders),
    ...setting.extraProviders,
    {
      provide: SERVICE_SETTING,
      inject: [DiscoveryService, HttpAdapterHost, DEFAULT_STORE],
      useFactory: (
        discovery: DiscoveryService,
        adapterHost: HttpAdapterHost,
        defaultStore: DefaultStore,
      ): RateLimitServiceSetting => ({ discovery, adapterHost, defaultStore, owner }),
    },
    {
      provide: RateLimitService,
      inject: [RATE_LIMIT_MODULE_OPTIONS, getStorageToken(), SERVICE_SETTING],
      useFactory: (options: RateLimitModuleOptions, store: Store, serviceSetting: RateLimitServiceSetting) =>
        new RateLimitService({ ...options, store }, serviceSetting),
    },
    RateLimitGuard,
  ];
  if (setting.global) providers.push({ provide: APP_GUARD, useExisting: RateLimitGuard });
  return {
    module: RateLimitModule,
    global: true,
    imports: [...setting.imports, DiscoveryModule],
    providers,
    exports: [RateLimitService, RateLimitGuard, getStorageToken()],
  };
}

function checkGlobal(value: unknown, field: string): boolean {
  if (value !== undefined && typeof value !== 'boolean')
    throw new InvalidOptionError(
      field,
      value,
      'true (the guard limits every route) or false (@UseGuards(RateLimitGuard) where you want it)',
    );
  return value === true;
}

/**
 * Checks the module's options as the app will build them, now: a limit built on a registry of its
 * own (it takes no namespace from the process's), without its observer (which would hear of a limit
 * that never runs) and closed at once.
 */
function checkOptions(options: RateLimitModuleOptions, owner: string): void {
  if (options === null || typeof options !== 'object')
    throw new InvalidOptionError(
      owner,
      options,
      'the module options, for example { algorithm: tokenBucket({ capacity: 20, refillRate: 10 }) }',
    );
  // An array (@nestjs/throttler's forRoot([{ ttl, limit }])) is refused as itself, before the spread below makes it { 0: … }.
  if (Array.isArray(options)) checkOptionNames(options, owner, []);
  const { global: _global, ...limitOptions } = options;
  const trial = new NestLimit(
    { ...limitOptions, observer: undefined, logStoreErrors: false },
    owner,
    undefined,
    new PrefixRegistry(),
  );
  void trial.close();
}
