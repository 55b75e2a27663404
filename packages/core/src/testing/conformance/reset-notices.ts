import { describe, expect } from 'vitest';
import { fixedWindow } from '../../algorithms/fixed-window.js';
import { createLimiter, type Limiter, type LimiterOptions } from '../../limiter/index.js';
import type { Store } from '../../store/interface.js';
import { freshPrefix, gatedIt, runsAll, type Suite } from './suite.js';

const T_DENIED = 5_000;
const T_CONTROL = 6_000;

/** One operator's call that may free a key some deny cache holds a denial of. */
interface NoticeRow {
  readonly control: string;
  /** What the store must declare for the row (beyond running fixed windows). */
  readonly applies: (store: Store) => boolean;
  readonly options: Partial<LimiterOptions> & Pick<LimiterOptions, 'algorithm'>;
  /** Through the first limiter, at {@link T_DENIED}: the key is denied in the store from then on. */
  readonly deny: (a: Limiter) => Promise<unknown>;
  /** Through the first limiter, at {@link T_CONTROL}. */
  readonly act: (a: Limiter) => Promise<unknown>;
  /** When the store admits the key again, after {@link T_CONTROL} (a shortened ban: its end). */
  readonly freeAfterMs: number;
}

const bans = (store: Store) => store.capabilities.bans === true;
const overrides = (store: Store) => (store.capabilities.overrides ?? []).includes('fixed-window');

/** The set-up of the rows that change a ban: the key banned for an hour, on a limit with bans. */
const bannedAnHour: Pick<NoticeRow, 'applies' | 'options' | 'deny'> = {
  applies: bans,
  options: { algorithm: fixedWindow({ limit: 10, window: '1h' }), bans: true },
  deny: (a) => a.block('k', '1h'),
};

const rows: readonly NoticeRow[] = [
  {
    control: 'reset(key)',
    applies: () => true,
    options: { algorithm: fixedWindow({ limit: 2, window: '1h' }) },
    deny: async (a) => (await a.consume('k'), await a.consume('k')),
    act: (a) => a.reset('k'),
    freeAfterMs: 0,
  },
  {
    control: 'reset(key) of a lockout',
    applies: (store) => store.capabilities.blocks === true,
    options: { algorithm: fixedWindow({ limit: 2, window: '1h' }), blockDuration: '1h' },
    deny: async (a) => (await a.consume('k'), await a.consume('k'), await a.consume('k')),
    act: (a) => a.reset('k'),
    freeAfterMs: 0,
  },
  { control: 'unblock(key)', ...bannedAnHour, act: (a) => a.unblock('k'), freeAfterMs: 0 },
  { control: 'block(key) with a shorter ban', ...bannedAnHour, act: (a) => a.block('k', '1m'), freeAfterMs: 60_000 },
  {
    control: 'setOverride(key) with a larger limit',
    applies: overrides,
    options: { algorithm: fixedWindow({ limit: 1, window: '1h' }), overrides: true },
    deny: (a) => a.consume('k'),
    act: (a) => a.setOverride('k', fixedWindow({ limit: 10, window: '1h' }), { ttl: '1d' }),
    freeAfterMs: 0,
  },
  {
    control: 'clearOverride(key) of a smaller limit',
    applies: overrides,
    options: { algorithm: fixedWindow({ limit: 10, window: '1h' }), overrides: true },
    deny: async (a) => (
      await a.setOverride('k', fixedWindow({ limit: 1, window: '1h' }), { ttl: '1d' }),
      await a.consume('k')
    ),
    act: (a) => a.clearOverride('k'),
    freeAfterMs: 0,
  },
];

/**
 * Runs `act` and resolves once `store` has told its listeners of `storageKey` (or that it may have
 * missed notices): at once for a store in this process, which tells inside the call; a store
 * several processes share tells soon after (the Redis store's channel).
 */
async function noticed(store: Store, storageKey: string, act: () => Promise<unknown>): Promise<void> {
  let heard: () => void = () => {};
  const told = new Promise<void>((resolve) => (heard = resolve));
  const listener = (key: string | undefined): void => void ((key === undefined || key === storageKey) && heard());
  store.watchResets?.(listener);
  await act();
  if (!store.capabilities.local && store.watchResets !== undefined) await told;
  // The store holds its listeners weakly: this one stays referenced until the notice came.
  void listener;
}

/**
 * Every control an operator makes on a key (a reset, a lockout lifted, a ban set or lifted, an
 * override set or cleared) reaches the deny cache of every limiter on the store
 * (`Store.watchResets`): limiters B and C, which cached the key's denial, admit it as soon as the
 * store does. A store in this process (`capabilities.local`) tells inside the control's call, so
 * when `await a.unblock(k)` resolves, B and C have forgotten; a store several processes share tells
 * soon after. A remote store without `watchResets` (its client cannot subscribe) is skipped: its
 * cached denials expire by themselves.
 */
export function describeResetNotices(suite: Suite): void {
  describe('controls reach every deny cache in front of the store (Store.watchResets)', () => {
    for (const row of rows) {
      const applies = () =>
        (suite.store.capabilities.local || suite.store.watchResets !== undefined) &&
        runsAll(suite.store, ['fixed-window']) &&
        row.applies(suite.store);
      gatedIt(
        `${row.control} through limiter A: B and C, which cached the key's denial, admit it once the store does`,
        applies,
        async () => {
          let now = T_DENIED;
          const options = {
            store: suite.store,
            clock: () => now,
            prefix: freshPrefix('notice'),
            timeout: false as const,
            denyCache: true,
            ...row.options,
          };
          const [a, b, c] = [createLimiter(options), createLimiter(options), createLimiter(options)];
          await row.deny(a);
          for (const other of [b, c]) {
            expect((await other.consume('k')).allowed).toBe(false);
            // In this process the second denial is the cache's (a remote store's new subscription may have cleared it).
            const again = await other.consume('k');
            expect(again.allowed).toBe(false);
            if (suite.store.capabilities.local) expect(again.reason).toBe('deny-cache');
          }
          now = T_CONTROL;
          await noticed(suite.store, a.storageKey('k'), () => row.act(a));
          now = T_CONTROL + row.freeAfterMs;
          for (const other of [b, c]) expect(await other.consume('k')).toMatchObject({ allowed: true });
        },
      );
    }
  });
}
