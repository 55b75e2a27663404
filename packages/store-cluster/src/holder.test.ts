import { fixedWindow } from '@rl/core';
import { MemoryStore } from '@rl/store-memory';
import { describe, expect, it } from 'vitest';
import { Holder } from './holder.js';
import type { HolderConnection } from './transport.js';
import { encode, wireAlgorithm, WIRE_VERSION } from './wire.js';

const limit = fixedWindow({ limit: 3, window: '1m' });
const algorithm = wireAlgorithm(limit);
const charge = { key: 'k', algorithm, cost: 1 };

/** A holder on a fresh memory store, and what it sent back on one connection. */
function holder(): { holder: Holder; store: MemoryStore; sent: string[]; connection: HolderConnection } {
  const store = new MemoryStore({ sweepInterval: false });
  const sent: string[] = [];
  return { holder: new Holder(store), store, sent, connection: { send: (text) => sent.push(text) } };
}

const calls = (...list: unknown[][]) => encode({ rl: WIRE_VERSION, calls: list });

describe('the holder refuses bad messages without crashing, and leaves the state as it was', () => {
  // Each: what a worker (or anything else on the channel) sent; and the answer: refused (no answer
  // at all: nothing to answer to) or the error's words.
  const cases: [string, unknown, 'refused' | RegExp][] = [
    ['not text', { calls: [] }, 'refused'],
    ['not JSON', '{"rl":1,"calls":[', 'refused'],
    ['JSON without rl', '[1,2]', 'refused'],
    ['no calls', encode({ rl: WIRE_VERSION, reset: null }), 'refused'],
    ['another version', encode({ rl: 99, calls: [[1, 'charge', charge, null]] }), /wire version 1/],
    ['an unknown verb', calls([1, 'flushall']), /verb must be charge, chargeAll/],
    ['a charge without a key', calls([1, 'charge', { ...charge, key: '' }, null]), /key must be a non-empty string/],
    ['a negative cost', calls([1, 'charge', { ...charge, cost: -5 }, null]), /RL_INVALID_COST|cost/i],
    ['a cost over the limit', calls([1, 'charge', { ...charge, cost: 4 }, null]), /capacity|exceeds/i],
    [
      'an unknown algorithm',
      calls([1, 'charge', { ...charge, algorithm: { ...algorithm, kind: 'magic' } }, null]),
      /kind must be/,
    ],
    [
      'bad options',
      calls([1, 'charge', { ...charge, algorithm: { ...algorithm, options: { limit: -1 } } }, null]),
      /factory accepts/,
    ],
    ['a bad now', calls([1, 'charge', charge, 'soon']), /now must be a finite number/],
    ['a scope without local', calls([1, 'charge', { ...charge, scope: 'a:' }, null]), /scope must be given with/],
    ['a bad idempotency record', calls([1, 'charge', { ...charge, idempotency: { id: 5 } }, null]), /idempotency\.id/],
    ['a lease on a rate limit', calls([1, 'acquire', 'k', algorithm, 'lease', null]), /a concurrency algorithm/],
    ['a ban of no duration', calls([1, 'ban', 'k', algorithm, 0, null]), /durationMs must be a finite number > 0/],
    [
      'a reservation of NaN',
      calls([1, 'charge', { ...charge, maxDelayMs: NaN }, null]),
      /maxDelayMs must be a finite number/,
    ],
    [
      'a settlement of text',
      calls([1, 'settle', 'k', algorithm, { cost: 1, actual: 'two', chargedAt: 0, delayMs: 0, maxDebt: 0 }, null]),
      /settlement\.actual must be a finite number/,
    ],
  ];
  for (const [name, message, expected] of cases) {
    it(name, () => {
      const h = holder();
      expect(() => h.holder.handle(h.connection, message)).not.toThrow();
      if (expected === 'refused') {
        expect(h.sent).toEqual([]);
        expect(h.holder.counts.refused).toBe(1);
      } else {
        const answer = JSON.parse(h.sent[0]!) as { answers: [number, number, { message: string }][] };
        expect(answer.answers).toHaveLength(1);
        expect(answer.answers[0]![1]).toBe(0);
        expect(answer.answers[0]![2].message).toMatch(expected);
      }
      expect(h.store.keyCount).toBe(0);
    });
  }

  it('answers each call of a message on its own: a bad one does not stop the good ones', () => {
    const h = holder();
    h.holder.handle(
      h.connection,
      calls([1, 'charge', charge, 0], [2, 'nothing'], 'junk' as never, [3, 'charge', charge, 0]),
    );
    const { answers } = JSON.parse(h.sent[0]!) as { answers: [number, number, unknown][] };
    expect(answers.map(([id, ok]) => [id, ok])).toEqual([
      [1, 1],
      [2, 0],
      [3, 1],
    ]);
    expect(h.holder.counts).toEqual({ messages: 1, calls: 3, refused: 1 });
    expect(h.store.peek('k', limit, 0, 0).remaining).toBe(1);
  });

  it('tells every connection of a reset before the answer of the call that made it', () => {
    const h = holder();
    const other: string[] = [];
    h.holder.handle({ send: (text) => other.push(text) }, calls([1, 'peek', 'k', algorithm, 0, null]));
    h.holder.handle(h.connection, calls([2, 'reset', 'k', algorithm]));
    expect(h.sent.map((text) => Object.keys(JSON.parse(text) as object))).toEqual([
      ['rl', 'reset'],
      ['rl', 'answers'],
    ]);
    expect(JSON.parse(other[1]!)).toEqual({ rl: WIRE_VERSION, reset: 'k' });
  });
});
