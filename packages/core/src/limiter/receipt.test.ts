/** What a decision a limiter returns carries of its charge: only what its reason cannot say, off its enumerable shape. */
import { describe, expect, it } from 'vitest';
import { makeDecision, makePolicy, type Decision } from '../decision.js';
import { chargedOf, isSettled, receipted, receiptOf, settleOnce, withReceiptOf } from './receipt.js';

const policy = makePolicy(5, 1000);
const admitted = (): Decision =>
  makeDecision({ allowed: true, limit: 5, remaining: 4, resetMs: 1000, retryAfterMs: 0, delayMs: 0, policy, at: 7 });

describe('receipts', () => {
  it.each([
    [
      'a plain charge',
      { took: 'charged' as const },
      { took: 'charged', conflict: false, idempotencyId: undefined },
      false,
    ],
    [
      'an idempotent charge the store remembers',
      { took: 'charged' as const, idempotencyId: 'id' },
      { took: 'charged', conflict: false, idempotencyId: 'id' },
      true,
    ],
    ['a replay', { took: 'replayed' as const }, { took: 'replayed', conflict: false, idempotencyId: undefined }, true],
    [
      'a conflict',
      { took: 'charged' as const, conflict: true },
      { took: 'charged', conflict: true, idempotencyId: undefined },
      true,
    ],
    [
      // Carried: a settle of it in the store is a change of the block, not a charge of its own.
      'units from a quota lease',
      { took: 'leased' as const },
      { took: 'leased', conflict: false, idempotencyId: undefined },
      true,
    ],
  ])('%s: the receipt, and whether the decision carries one', (_, charged, receipt, carries) => {
    const decision = receipted({ decision: admitted(), ...charged });
    const { took, conflict, idempotencyId } = receiptOf(decision);
    expect({ took, conflict, idempotencyId }).toEqual(receipt);
    expect(Object.getOwnPropertySymbols(decision).length).toBe(carries ? 1 : 0);
    // The documented shape is unchanged: nothing enumerable is added.
    expect(Object.keys(decision)).toEqual(Object.keys(admitted()));
    expect(JSON.stringify(decision)).toBe(JSON.stringify(admitted()));
  });

  it('a decision made without the store took nothing, and carries no receipt', () => {
    const denied = {
      ...makeDecision({
        allowed: false,
        limit: 5,
        remaining: 0,
        resetMs: 1000,
        retryAfterMs: 1000,
        delayMs: 0,
        policy,
        at: 7,
      }),
      reason: 'deny-cache' as const,
    };
    expect(receipted({ decision: denied, took: 'nothing' })).toBe(denied);
    expect(receiptOf(denied).took).toBe('nothing');
    expect(Object.getOwnPropertySymbols(denied)).toEqual([]);
  });

  it('a charge is settled once, through the decision or a copy that shares its receipt', () => {
    const decision = admitted();
    const copy = withReceiptOf(decision, { ...decision, cancel: () => Promise.resolve() });
    expect([isSettled(decision), isSettled(copy)]).toEqual([false, false]);
    expect(settleOnce(copy)).toBe(true);
    expect([settleOnce(decision), settleOnce(copy), isSettled(decision)]).toEqual([false, false, true]);
    const plain = admitted();
    expect([settleOnce(plain), settleOnce(plain)]).toEqual([true, false]);
  });

  it('a frozen decision cannot record it: each settle of it is taken as the first', () => {
    const frozen = Object.freeze(admitted());
    expect([settleOnce(frozen), settleOnce(frozen)]).toEqual([true, true]);
  });

  it('chargedOf reads the receipt back into a record', () => {
    const decision = receipted({ decision: admitted(), took: 'charged', idempotencyId: 'abc' });
    expect(chargedOf(decision)).toEqual({ decision, took: 'charged', conflict: false, idempotencyId: 'abc' });
  });
});
