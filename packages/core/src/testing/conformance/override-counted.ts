import { expect } from 'vitest';
import type { AlgorithmKind } from '../../algorithm.js';
import { fixedWindow } from '../../algorithms/fixed-window.js';
import { slidingWindowCounter } from '../../algorithms/sliding-window-counter.js';
import { slidingWindowLog } from '../../algorithms/sliding-window-log.js';
import type { Limiter, LimiterOptions } from '../../limiter/index.js';
import { gatedIt, type Suite } from './suite.js';

const MINUTE = 60_000;

/**
 * Overrides of the algorithms that count denials (`countDenied`): a reservation of a cost above the
 * override's limit is denied and counts nothing, as any denied reservation (see `requestUnder`).
 * `overrides(kinds)`: whether the store overrides them; `limiterOf`: a limiter with overrides on.
 */
export function describeCountedReservations(
  suite: Suite,
  overrides: (kinds: readonly AlgorithmKind[]) => boolean,
  limiterOf: (options: Partial<LimiterOptions>, clock: () => number) => Limiter,
): void {
  // The algorithms that count denials (`countDenied`), each named by its own `kind`.
  for (const make of [
    (limit: number) => fixedWindow({ limit, window: '1m', countDenied: true }),
    (limit: number) => slidingWindowCounter({ limit, window: '1m', countDenied: true }),
    (limit: number) => slidingWindowLog({ limit, window: '1m', countDenied: true }),
  ]) {
    const kind = make(1).kind;
    gatedIt(
      `${kind} with countDenied: a reservation of a cost above the override's limit is denied and counts nothing (a denied reservation takes nothing)`,
      () => overrides([kind]) && suite.store.capabilities.reservations === true,
      async () => {
        const now = 1_000;
        const limiter = limiterOf({ algorithm: make(10) }, () => now);
        await limiter.setOverride('k', make(3), { ttl: '1h' });
        const maxDelay = MINUTE;
        expect(await limiter.reserve('k', 5, { maxDelay })).toMatchObject({
          allowed: false,
          retryAfterMs: 3_600_000,
        });
        expect(await limiter.reserve('k', 3, { maxDelay })).toMatchObject({ allowed: true, delayMs: 0 });
      },
    );
  }
}
