import { describe, expect } from 'vitest';
import type { Algorithm } from '../../algorithm.js';
import { withBans } from '../../algorithms/block.js';
import { fixedWindow } from '../../algorithms/fixed-window.js';
import type { Charged, IdempotentCharge, Store } from '../../store/interface.js';
import { freshPrefix, gatedIt, rateSamples, runsAll, type Suite } from './suite.js';

const HOUR = 3_600_000;

/** An idempotent charge's id and fingerprint as the limiter sends them (digests of 16 and 8 base64url characters), remembered an hour. */
const idempotent = (id: string, fingerprint: string, maxReplays = 5): IdempotentCharge => ({
  id: id.padStart(16, '0'),
  fingerprint: fingerprint.padStart(8, '0'),
  ttlMs: HOUR,
  maxIds: 10,
  maxReplays,
});

/** What a {@link Charged} says beside its decision: `[allowed, took, conflict, idempotencyId]` (a conflict `false` when not said). */
const said = (charged: Charged): [boolean, Charged['took'], boolean, string | undefined] => [
  charged.decision.allowed,
  charged.took,
  charged.conflict === true,
  charged.idempotencyId,
];

/** One unit of `key` charged at `now`, idempotent when given an id. */
const chargeOne = async (
  store: Store,
  key: string,
  algorithm: Algorithm,
  now: number,
  idempotency?: IdempotentCharge,
): Promise<Charged> =>
  store.charge(idempotency === undefined ? { key, algorithm, cost: 1 } : { key, algorithm, cost: 1, idempotency }, now);

/** A row of {@link expectSaid}: a charge of one unit at `now` (idempotent when given an id), and what it says. */
type SaidRow = [now: number, idempotency: IdempotentCharge | undefined, expected: ReturnType<typeof said>];

/** Charges one unit of `key` per row, in order, and expects what each says (see {@link said}). */
async function expectSaid(store: Store, key: string, algorithm: Algorithm, rows: readonly SaidRow[]): Promise<void> {
  for (const [now, idempotency, expected] of rows) {
    expect(said(await chargeOne(store, key, algorithm, now, idempotency)), `the charge at ${now}`).toEqual(expected);
  }
}

/**
 * What a charge took, asked of the store itself (`Store.charge` answers a `Charged` record): a plain
 * charge `'charged'`, admitted or denied; on a store that declares `capabilities.idempotency`, the id
 * an admitting decision was remembered under (`idempotencyId`), a replay (`'replayed'`, nothing
 * charged, no id), a conflict (`conflict: true`, no id), a denial remembering nothing, a give-back
 * with the id forgetting it, and a ban's denial that is neither a replay nor a conflict. The limiter's
 * view of the same rules is in `idempotency.ts`.
 */
export function describeCharged(suite: Suite): void {
  const remembers = () => suite.store.capabilities.idempotency === true;
  /** A test on a store that remembers ids, with a fresh key of a fixed window of 10 per hour. */
  const onFixedWindow = (name: string, body: (store: Store, key: string, algorithm: Algorithm) => Promise<void>) =>
    gatedIt(
      name,
      () => remembers() && runsAll(suite.store, ['fixed-window']),
      () => body(suite.store, `${freshPrefix('charged')}:k`, fixedWindow({ limit: 10, window: '1h' })),
    );

  describe('what a charge took (Store.charge answers a Charged record)', () => {
    for (const sample of rateSamples) {
      gatedIt(
        `${sample.label}: a charge admitted or denied took 'charged', with no conflict and no id`,
        () => runsAll(suite.store, [sample.kind]),
        async () => {
          const key = `${freshPrefix('charged')}:k`;
          const algorithm = sample.make(1, HOUR);
          await expectSaid(suite.store, key, algorithm, [
            [10_000, undefined, [true, 'charged', false, undefined]],
            [10_000, undefined, [false, 'charged', false, undefined]],
          ]);
        },
      );

      gatedIt(
        `${sample.label}: an idempotent charge admitted has its id remembered; its retry is replayed (the original's at, no id); another fingerprint is a conflict (no id); a denial remembers nothing`,
        () => remembers() && runsAll(suite.store, [sample.kind]),
        async () => {
          const store = suite.store;
          const key = `${freshPrefix('charged')}:k`;
          const algorithm = sample.make(2, HOUR);
          const first = await chargeOne(store, key, algorithm, 10_000, idempotent('A', 'x'));
          expect(said(first)).toEqual([true, 'charged', false, idempotent('A', 'x').id]);
          const replay = await chargeOne(store, key, algorithm, 10_001, idempotent('A', 'x'));
          expect([...said(replay), replay.decision.at]).toEqual([
            true,
            'replayed',
            false,
            undefined,
            first.decision.at,
          ]);
          await expectSaid(store, key, algorithm, [
            [10_002, idempotent('A', 'y'), [true, 'charged', true, undefined]],
            [10_003, idempotent('B', 'x'), [false, 'charged', false, undefined]],
            [10_004, idempotent('B', 'x'), [false, 'charged', false, undefined]],
          ]);
          expect((await store.peek(key, algorithm, 0, 10_004)).remaining).toBe(0);
        },
      );
    }

    onFixedWindow(
      "a give-back with the charge's idempotencyId forgets it (the retry is charged and remembered afresh); one without it keeps the record (the retry replays)",
      async (store, key, algorithm) => {
        const a = await chargeOne(store, key, algorithm, 10_000, idempotent('A', 'x'));
        const b = await chargeOne(store, key, algorithm, 10_000, idempotent('B', 'x'));
        await store.giveBack(
          { key, algorithm, cost: 1, chargedAt: a.decision.at, idempotencyId: a.idempotencyId },
          10_001,
        );
        await store.giveBack({ key, algorithm, cost: 1, chargedAt: b.decision.at }, 10_001);
        await expectSaid(store, key, algorithm, [
          [10_002, idempotent('A', 'x'), [true, 'charged', false, idempotent('A', 'x').id]],
          [10_002, idempotent('B', 'x'), [true, 'replayed', false, undefined]],
        ]);
        expect((await store.peek(key, algorithm, 0, 10_002)).remaining).toBe(9);
      },
    );

    onFixedWindow(
      'past maxReplays the retry is charged as new, its id remembered afresh (and replayed again)',
      async (store, key, algorithm) => {
        const once = idempotent('A', 'x', 1);
        const took: [boolean, Charged['took'], boolean, string | undefined][] = [];
        for (let i = 0; i < 4; i++) took.push(said(await chargeOne(store, key, algorithm, 10_000 + i, once)));
        expect(took).toEqual([
          [true, 'charged', false, once.id],
          [true, 'replayed', false, undefined],
          [true, 'charged', false, once.id],
          [true, 'replayed', false, undefined],
        ]);
      },
    );

    gatedIt(
      "while the key is banned an idempotent charge gets the ban's denial, neither a replay nor a conflict, with no id; unbanned, the kept record replays",
      () => remembers() && suite.store.capabilities.bans === true && runsAll(suite.store, ['fixed-window']),
      async () => {
        const store = suite.store;
        const key = `${freshPrefix('charged')}:k`;
        const algorithm = withBans(fixedWindow({ limit: 10, window: '1h' }));
        const first = await chargeOne(store, key, algorithm, 10_000, idempotent('A', 'x'));
        await store.ban!(key, algorithm, HOUR, 10_001);
        for (const fingerprint of ['x', 'y']) {
          const banned = await chargeOne(store, key, algorithm, 10_002, idempotent('A', fingerprint));
          expect([...said(banned), banned.decision.reason]).toEqual([false, 'charged', false, undefined, 'blocked']);
        }
        await store.unban!(key, algorithm);
        const replay = await chargeOne(store, key, algorithm, 10_003, idempotent('A', 'x'));
        expect([...said(replay), replay.decision.at]).toEqual([true, 'replayed', false, undefined, first.decision.at]);
      },
    );
  });
}
