import { describe, expect, it, vi, type Mock } from 'vitest';
import { fixedWindow } from '../algorithms/fixed-window.js';
import type { Store } from '../store/interface.js';
import { TestStore } from '../testing/test-store.js';
import { directBinding, type FrameworkBinding } from './binding.js';
import { DefaultStore } from './default-store.js';
import { PrefixRegistry } from './prefixes.js';
import { HttpRateLimiter } from './rate-limiter.js';

type Closable = TestStore & { close: Mock<() => void> };

/** A `TestStore` whose `close` is recorded. */
const closable = (): Closable => Object.assign(new TestStore(), { close: vi.fn<() => void>() });

/** A `DefaultStore` whose default is a {@link closable} store, and the stores it made. */
function owner(): { defaults: DefaultStore; made: Closable[] } {
  const made: Closable[] = [];
  const defaults = new DefaultStore(() => {
    const store = closable();
    made.push(store);
    return store;
  });
  return { defaults, made };
}

describe('DefaultStore: the default store is made once, at its first use, and closed with its owner', () => {
  it('makes nothing while every caller gives its store, and closes nothing', async () => {
    const { defaults, made } = owner();
    const given = closable();
    expect(defaults.storeFor(given)).toBe(given);
    expect(defaults.storeFor(given)).toBe(given);
    expect(defaults.created).toBeUndefined();
    await defaults.close();
    expect(made).toEqual([]);
    expect(given.close).not.toHaveBeenCalled();
  });

  it('makes the default at the first call without a store, the same one after; closes it, never the given one', async () => {
    const { defaults, made } = owner();
    const given = closable();
    const first = defaults.storeFor(undefined);
    expect(made).toEqual([first]);
    expect(defaults.storeFor(undefined)).toBe(first);
    expect(defaults.storeFor(given)).toBe(given);
    expect(defaults.created).toBe(first);
    expect(made).toHaveLength(1);
    await defaults.close();
    expect(made[0]!.close).toHaveBeenCalledTimes(1);
    expect(given.close).not.toHaveBeenCalled();
  });

  it('returns any given value but undefined as it is (null included): the store option is checked where it is used', () => {
    const { defaults, made } = owner();
    expect(defaults.storeFor(null as unknown as Store)).toBeNull();
    expect(made).toEqual([]);
  });

  it('waits for an asynchronous close', async () => {
    let closed = false;
    const defaults = new DefaultStore(() =>
      Object.assign(new TestStore(), { close: () => Promise.resolve().then(() => void (closed = true)) }),
    );
    defaults.storeFor(undefined);
    await defaults.close();
    expect(closed).toBe(true);
  });
});

describe('HttpRateLimiter owns its default store through DefaultStore', () => {
  const binding = (createStore: () => Store): FrameworkBinding<{ ip: string }> =>
    directBinding({ owner: 'rateLimit', clientIp: (req) => req.ip, createStore });
  const algorithm = fixedWindow({ limit: 5, window: '1m' });

  it('creates the default store only when a limit needs it, and closes only that one', async () => {
    const created: Closable[] = [];
    const create = (): Store => {
      const store = closable();
      created.push(store);
      return store;
    };
    const given = closable();
    const withGiven = new HttpRateLimiter({ algorithm, store: given }, binding(create), new PrefixRegistry());
    expect(withGiven.ownedStore).toBeUndefined();
    await withGiven.close();
    expect(created).toEqual([]);
    expect(given.close).not.toHaveBeenCalled();

    // Two limits without a store of their own share one default store.
    const withDefault = new HttpRateLimiter(
      {
        limits: [
          { name: 'a', algorithm },
          { name: 'b', algorithm },
        ],
      },
      binding(create),
      new PrefixRegistry(),
    );
    expect(created).toHaveLength(1);
    expect(withDefault.ownedStore).toBe(created[0]);
    expect(withDefault.limiters.map((l) => l.store)).toEqual([created[0], created[0]]);
    await withDefault.close();
    expect(created[0]!.close).toHaveBeenCalledTimes(1);
  });

  it('closes the default store it made when the options are refused after it (a limit its store cannot run)', () => {
    const store = closable();
    Object.assign(store, { capabilities: { ...store.capabilities, settle: false } });
    expect(
      () =>
        new HttpRateLimiter(
          { algorithm, actualCost: () => 1 },
          binding(() => store),
          new PrefixRegistry(),
        ),
    ).toThrow();
    expect(store.close).toHaveBeenCalledTimes(1);
  });
});
