/**
 * The memory store tells every limiter on it of each control (`watchResets`): three limiters with a
 * deny cache share one store, A makes the control, B and C have cached the key's denial; after the
 * control they make a request every 3 minutes for the rest of the hour on a fake clock, and none is
 * a stale denial. Quota leases hear a reset made by another limiter, and the store holds its
 * listeners weakly.
 */
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createLimiter, fixedWindow, type Limiter } from '@rl/core';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryStore } from './memory-store.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

const stores: MemoryStore[] = [];
function newStore(): MemoryStore {
  const store = new MemoryStore({ sweepInterval: false });
  stores.push(store);
  return store;
}
afterEach(() => {
  for (const store of stores.splice(0)) store.close();
});

/** One control of the table: the limit, what denies the key (at 0), the control (at 1 minute), and when the store admits the key again. */
interface ControlRow {
  readonly control: string;
  readonly limit: number;
  readonly deny: (a: Limiter) => Promise<unknown>;
  readonly act: (a: Limiter) => Promise<unknown>;
  readonly freeFrom: number;
}

const rows: readonly ControlRow[] = [
  { control: 'unblock', limit: 100, deny: (a) => a.block('k', '1h'), act: (a) => a.unblock('k'), freeFrom: MINUTE },
  {
    control: "block with a ban of 2 minutes (the hour's ban shortened)",
    limit: 100,
    deny: (a) => a.block('k', '1h'),
    act: (a) => a.block('k', '2m'),
    freeFrom: 3 * MINUTE,
  },
  {
    control: 'setOverride (1 → 100)',
    limit: 1,
    deny: (a) => a.consume('k'),
    act: (a) => a.setOverride('k', fixedWindow({ limit: 100, window: '1h' }), { ttl: '1d' }),
    freeFrom: MINUTE,
  },
  {
    control: 'clearOverride (back from 1 to 100)',
    limit: 100,
    deny: async (a) => (
      await a.setOverride('k', fixedWindow({ limit: 1, window: '1h' }), { ttl: '1d' }),
      await a.consume('k')
    ),
    act: (a) => a.clearOverride('k'),
    freeFrom: MINUTE,
  },
  {
    control: 'reset',
    limit: 50,
    deny: (a) => Promise.all(Array.from({ length: 50 }, () => a.consume('k'))),
    act: (a) => a.reset('k'),
    freeFrom: MINUTE,
  },
];

describe('three limiters with a deny cache on one MemoryStore (issue 37, item 8)', () => {
  it.each(rows)(
    "after A's $control, B and C make no stale denial for the rest of the hour",
    async ({ limit, deny, act, freeFrom }) => {
      let now = 0;
      const store = newStore();
      const options = {
        algorithm: fixedWindow({ limit, window: '1h' }),
        store,
        clock: () => now,
        prefix: 'api',
        denyCache: true,
        bans: true,
        overrides: true,
      };
      const [a, b, c] = [createLimiter(options), createLimiter(options), createLimiter(options)];
      await deny(a);
      for (const other of [b, c]) {
        expect((await other.consume('k')).allowed).toBe(false);
        expect(await other.consume('k')).toMatchObject({ allowed: false, reason: 'deny-cache' });
      }
      now = MINUTE;
      await act(a);
      let stale = 0;
      let admitted = 0;
      for (now = freeFrom; now < HOUR; now += 3 * MINUTE) {
        for (const other of [b, c]) {
          if ((await other.consume('k')).allowed) admitted++;
          else stale++;
        }
      }
      expect({ stale, admitted }).toEqual({ stale: 0, admitted: 2 * Math.ceil((HOUR - freeFrom) / (3 * MINUTE)) });
    },
  );

  it('a quota lease drops its block when another limiter resets the key: the window admits the limit, not the limit and the old block', async () => {
    const store = newStore();
    const algorithm = fixedWindow({ limit: 10, window: '1h' });
    const leased = createLimiter({ algorithm, store, clock: () => 0, prefix: 'api', lease: { units: 5, ttl: '1h' } });
    const admin = createLimiter({ algorithm, store, clock: () => 0, prefix: 'api' });
    expect(leased.consumeSync('k').allowed).toBe(true);
    // The leased limiter holds 4 units of a block of 5 charged in the store; the reset forgets that charge.
    await admin.reset('k');
    let admitted = 0;
    for (let i = 0; i < 20; i++) if (leased.consumeSync('k').allowed) admitted++;
    for (let i = 0; i < 20; i++) if (admin.consumeSync('k').allowed) admitted++;
    expect(admitted).toBe(10);
  });

  it('holds its listeners weakly: a listener nothing else holds is collected', async () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const store = newStore();
    const refs: WeakRef<object>[] = [];
    const register = (): void => {
      const listener = (): void => {};
      refs.push(new WeakRef(listener));
      store.watchResets(listener);
    };
    for (let i = 0; i < 100; i++) register();
    // A WeakRef keeps its target for the rest of the job that made it: collect in the next one.
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    expect(refs.filter((ref) => ref.deref() !== undefined)).toEqual([]);
    // The store still tells the live ones.
    const heard: (string | undefined)[] = [];
    const live = (key: string | undefined): void => void heard.push(key);
    store.watchResets(live);
    const limiter = createLimiter({
      algorithm: fixedWindow({ limit: 1, window: '1h' }),
      store,
      clock: () => 0,
      prefix: 'api',
    });
    await limiter.reset('k');
    expect(heard).toEqual([limiter.storageKey('k')]);
  });
});
