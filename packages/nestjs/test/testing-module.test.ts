// The store's provider replaced in a test module, as the README says: `Test.createTestingModule(…)
// .overrideProvider(getStorageToken())`. On Nest 12 only: @nestjs/testing is installed for Nest 12 (no
// Nest 11 alias), and this is about Nest's override, not the major.
import 'reflect-metadata';
import { Controller, Get, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { expect, it, vi } from 'vitest';
import { fixedWindow } from '@rl/core';
import { MemoryStore } from '@rl/store-memory';
import { T0 } from '@rl/test-support';
import { getStorageToken, RateLimitModule, RateLimitService } from '../src/index.js';
import { expectNest } from './support/nest-app.js';

expectNest(12);

@Controller()
class ItemsController {
  @Get('items')
  list() {
    return {};
  }
}

@Module({
  imports: [
    RateLimitModule.forRoot({ clock: () => T0, algorithm: fixedWindow({ limit: 2, window: '1m' }), global: true }),
  ],
  controllers: [ItemsController],
})
class AppModule {}

it("overrideProvider(getStorageToken()) gives the module's limits the test's store, which rl leaves open", async () => {
  const store = new MemoryStore();
  // Spied from here: forRoot's check of the options, when AppModule was defined, closed the store of its trial limit.
  const closeSpy = vi.spyOn(MemoryStore.prototype, 'close');
  try {
    const testing = await Test.createTestingModule({ imports: [AppModule] })
      .overrideProvider(getStorageToken())
      .useValue(store)
      .compile();
    const app = testing.createNestApplication({ logger: false });
    await app.init();
    expect(app.get(getStorageToken())).toBe(store);
    expect(app.get(RateLimitService).limiter.limiters[0]!.store).toBe(store);
    await app.close();
    // Neither the test's store nor a default one (none was made) was closed.
    expect(closeSpy).not.toHaveBeenCalled();
  } finally {
    closeSpy.mockRestore();
    store.close();
  }
});
