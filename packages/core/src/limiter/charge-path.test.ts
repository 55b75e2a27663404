/** Stages of one signature, composed once: each answers, or hands the charge on and reads the answer back. */
import { describe, expect, it } from 'vitest';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { makeDecision, makePolicy } from '../decision.js';
import type { Charge } from '../store/interface.js';
import { composeStages, type ChargeAnswer, type ChargeStage } from './charge-path.js';
import { requireCapability } from './capabilities.js';

const algorithm = fixedWindow({ limit: 5, window: '1s' });
const charge: Charge = { key: 'k', algorithm, cost: 1 };
const answer: ChargeAnswer = {
  decision: makeDecision({
    allowed: true,
    limit: 5,
    remaining: 4,
    resetMs: 1000,
    retryAfterMs: 0,
    delayMs: 0,
    policy: makePolicy(5, 1000),
    at: 0,
  }),
  took: 'charged',
};

describe('composeStages', () => {
  it('runs the stages outermost first, down to the last, and back up in reverse', () => {
    const seen: string[] = [];
    const stage =
      (name: string): ChargeStage =>
      (c, next) => {
        seen.push(`${name} down`);
        const a = next(c) as ChargeAnswer;
        seen.push(`${name} up`);
        return a;
      };
    const path = composeStages([stage('observe'), stage('leases'), stage('deny cache')], (c) => {
      seen.push(`store ${c.key}`);
      return answer;
    });
    expect(path(charge)).toBe(answer);
    expect(seen).toEqual([
      'observe down',
      'leases down',
      'deny cache down',
      'store k',
      'deny cache up',
      'leases up',
      'observe up',
    ]);
  });

  it('a stage that answers itself never reaches the ones below; no stages: the last alone', () => {
    const below: Charge[] = [];
    const cached: ChargeAnswer = { ...answer, took: 'nothing' };
    const path = composeStages([() => cached], (c) => (below.push(c), answer));
    expect([path(charge), below]).toEqual([cached, []]);
    expect(composeStages([], () => answer)(charge)).toBe(answer);
  });
});

describe('requireCapability', () => {
  it.each([
    [
      'settle',
      'limiter.settle()',
      'limiter.settle() needs a store that settles charges at their real cost (capabilities.settle), such as MemoryStore or RedisStore.',
    ],
    [
      'reservations',
      'wait',
      'wait needs a store that runs reservations (capabilities.reservations), such as MemoryStore or RedisStore.',
    ],
    [
      'idempotency',
      'rateLimit.idempotencyKey',
      'rateLimit.idempotencyKey needs a store that runs idempotent charges (capabilities.idempotency), such as MemoryStore or RedisStore.',
    ],
  ] as const)('%s: one message, naming what needs it', (capability, what, message) => {
    const store = { capabilities: { local: true, algorithms: [] } };
    expect(() => requireCapability(store, capability, what)).toThrow(
      expect.objectContaining({ code: 'RL_UNSUPPORTED', message: expect.stringContaining(message) }),
    );
    expect(() =>
      requireCapability({ capabilities: { ...store.capabilities, [capability]: true } }, capability, what),
    ).not.toThrow();
  });
});
