import type { FactoryProvider, Provider } from '@nestjs/common';
import type { Store } from '@rl/core';
import { DefaultStore } from '@rl/core/http';
import { MemoryStore } from '@rl/store-memory';
import type { RateLimitModuleOptions } from './options.js';

/** Injection token of the store the module's limits share (see {@link getStorageToken}). */
const RATE_LIMIT_STORE = Symbol('rl:store');

/** Injection token of the module's {@link DefaultStore}: the memory store it makes when nothing else gives one. */
export const DEFAULT_STORE = Symbol('rl:default-store');

/**
 * The injection token of the store the module's limits share (as @nestjs/throttler's
 * `getStorageToken()`). `RateLimitModule` provides it and exports it:
 *
 * - by default its value is the options' `store`, else a `MemoryStore` the module makes and closes
 *   at shutdown (after the limits gave back what their quota leases hold);
 * - a provider of this token in `RateLimitModule.forRootAsync({ extraProviders })` replaces that one
 *   (the options then give no `store`), as does `overrideProvider(getStorageToken())` in a test
 *   module: the store it gives is yours, used by every limit of the module that gives no store of its
 *   own, checked as the `store` option is, and never closed by rl.
 *
 * Inject it to reach that store (`@Inject(getStorageToken()) store: Store`), for example to give the
 * same store to `createRateLimitGuard`.
 */
export function getStorageToken(): symbol {
  return RATE_LIMIT_STORE;
}

/** True when `provider` provides the store token (a provider of `extraProviders` that replaces the module's). */
export function providesStore(provider: Provider): boolean {
  return (
    typeof provider === 'object' && provider !== null && 'provide' in provider && provider.provide === RATE_LIMIT_STORE
  );
}

/**
 * The module's store providers: its {@link DefaultStore} (one per app: made by a factory, so two apps
 * of one module share no default store), and, unless `extraProviders` give one, the store token's
 * default: the options' `store`, else the default store.
 */
export function storeProviders(optionsToken: symbol, extraProviders: readonly Provider[]): Provider[] {
  const defaults: FactoryProvider<DefaultStore> = {
    provide: DEFAULT_STORE,
    useFactory: () => new DefaultStore(() => new MemoryStore()),
  };
  if (extraProviders.some(providesStore)) return [defaults];
  const store: FactoryProvider<Store> = {
    provide: RATE_LIMIT_STORE,
    inject: [optionsToken, DEFAULT_STORE],
    useFactory: (options: RateLimitModuleOptions | null | undefined, made: DefaultStore) =>
      made.storeFor(options?.store),
  };
  return [defaults, store];
}
