import { describe, expect, it } from 'vitest';
import { concurrency, fixedWindow, slidingWindowLog, tokenBucket } from '@rl/core';
import { RedisStore } from './redis-store.js';
import { INLINE_CONFIGURATIONS } from './script-plan.js';

// What the store sends, without Redis: the scripts it defines and the arguments of each call.

/** A client that records the scripts defined on it and the arguments of each call (every reply: allowed, nothing else). */
function recordingClient() {
  const defined = new Map<string, { numberOfKeys: number; lua: string }>();
  const calls: string[][] = [];
  const reply = Buffer.alloc(48);
  reply.writeDoubleLE(1, 0);
  const client: Record<string, unknown> = {
    defineCommand(name: string, definition: { numberOfKeys: number; lua: string }) {
      defined.set(name, definition);
      client[`${name}Buffer`] = (...args: string[]) => {
        calls.push(args);
        return Promise.resolve(reply);
      };
    },
  };
  return { client, defined, calls };
}

describe('RedisStore calls', () => {
  it('the store declares each configuration before its script, numbers as exact literals', async () => {
    const { client, defined } = recordingClient();
    const store = new RedisStore({ client: client as never, batch: false });
    await store.charge(
      { key: 'k', algorithm: tokenBucket({ capacity: 3, refillRate: 1, interval: '3s' }), cost: 1 },
      undefined,
    );
    const [definition] = [...defined.values()];
    expect(definition!.numberOfKeys).toBe(1);
    expect(definition!.lua.split('\n').slice(0, 5)).toEqual([
      "local OP, IDEMPOTENT, BATCH_TIME, UNDO_AT, UNDO_DELAY = 'c', false, false",
      'local EXPLICIT_NOW_MARGIN_MS, IDEM_KEY = 1000, 2',
      'local ARG_OWN, ARG_NOW, ARG_MAX_DELAY, ARG_CHARGED_AT, ARG_DELAY, ARG_ACTUAL, ARG_MAX_DEBT, ARG_IDEM, ARG_FINGERPRINT, ARG_IDEM_TTL, ARG_IDEM_MAX, ARG_IDEM_REPLAYS = 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13',
      'local CAPACITY, RATE = 3, 0.0003333333333333333',
      'local HORIZON, STATE_BYTES = 9000, 24',
    ]);
  });

  it('a call sends its keys, then the arguments of the wire protocol in one order for every operation (own, now, maxDelay, chargedAt, delay), the absent ones at the end left out', async () => {
    const { client, calls } = recordingClient();
    const store = new RedisStore({ client: client as never, prefix: 'p:', buckets: 1, batch: false });
    const bucket = tokenBucket({ capacity: 3, refillRate: 1 });
    const log = slidingWindowLog({ limit: 3, window: '1s' });
    const leases = concurrency({ limit: 3 });
    await store.charge({ key: 'k', algorithm: bucket, cost: 1 }, undefined);
    await store.charge({ key: 'k', algorithm: bucket, cost: 2 }, undefined);
    await store.peek('k', bucket, 1, 5);
    await store.giveBack({ key: 'k', algorithm: log, cost: 1 }, undefined);
    // An undo's: the cost, now, a reservation's place, then the time and the delay of the charge ('' for none).
    await store.giveBack({ key: 'k', algorithm: log, cost: 1, chargedAt: 1764590000123.456 }, undefined);
    await store.giveBack({ key: 'k', algorithm: bucket, cost: 1 }, 9);
    await store.giveBack({ key: 'k', algorithm: bucket, cost: 1, chargedAt: 100, delayMs: 40 }, undefined);
    // A reservation's: the cost, now, then its maxDelay.
    await store.charge({ key: 'k', algorithm: bucket, cost: 1, maxDelayMs: 250 }, undefined);
    await store.charge({ key: 'k', algorithm: log, cost: 2, maxDelayMs: 0 }, 8);
    await store.charge({ key: 'k', algorithm: log, cost: 1.5 }, 7);
    await store.acquire('k', leases, 'lease.1', undefined);
    await store.charge({ key: 'k', algorithm: leases, cost: 1 }, undefined);
    await store.release('k', leases, 'lease.1');
    expect(calls).toEqual([
      ['p:{#0}:tb', 'k'],
      ['p:{#0}:tb', 'k', '2'],
      ['p:{#0}:tb', 'k', '', '5'],
      ['p:{k}:swl2', 'p:{k}:swl2:sum'],
      ['p:{k}:swl2', 'p:{k}:swl2:sum', '', '', '', '1764590000123.456'],
      ['p:{#0}:tb', 'k', '', '9'],
      ['p:{#0}:tb', 'k', '', '', '', '100', '40'],
      ['p:{#0}:tb', 'k', '', '', '250'],
      ['p:{k}:swl2', 'p:{k}:swl2:sum', '2', '8', '0'],
      ['p:{k}:swl2', 'p:{k}:swl2:sum', '1.5', '7'],
      ['p:{k}:cc', 'lease.1'],
      // A lease limit's consume reports its state: a peek for no lease.
      ['p:{k}:cc', ''],
      ['p:{k}:cc', 'lease.1'],
    ]);
  });
});

describe('idempotent charges on the wire', () => {
  it('the same operation with the idempotency arguments, its own script declaring IDEMPOTENT; a state with keys of its own sends the key of its remembered ids', async () => {
    const { client, defined, calls } = recordingClient();
    const store = new RedisStore({ client: client as never, prefix: 'p:', buckets: 1, batch: false });
    const bucket = tokenBucket({ capacity: 3, refillRate: 1 });
    const log = slidingWindowLog({ limit: 3, window: '1s' });
    const idempotency = { id: 'id-aaaaaaaaaaaaa', fingerprint: 'print-01', ttlMs: 60_000, maxIds: 10, maxReplays: 5 };
    await store.charge({ key: 'k', algorithm: bucket, cost: 1, idempotency }, undefined);
    await store.charge({ key: 'k', algorithm: log, cost: 2, maxDelayMs: 0, idempotency }, 8);
    // The give-back that forgets the id sends the id alone after the undo's arguments.
    await store.giveBack({ key: 'k', algorithm: log, cost: 1, chargedAt: 5, idempotencyId: idempotency.id }, undefined);
    await store.giveBack({ key: 'k', algorithm: log, cost: 1, chargedAt: 5 }, undefined);
    const remembered = ['id-aaaaaaaaaaaaa', 'print-01', '60000', '10', '5'];
    expect(calls).toEqual([
      ['p:{#0}:tb', 'k', '', '', '', '', '', '', '', ...remembered],
      ['p:{k}:swl2', 'p:{k}:swl2:sum', 'p:{k}:swl2:idem', '2', '8', '0', '', '', '', '', ...remembered],
      ['p:{k}:swl2', 'p:{k}:swl2:sum', 'p:{k}:swl2:idem', '', '', '', '5', '', '', '', 'id-aaaaaaaaaaaaa'],
      ['p:{k}:swl2', 'p:{k}:swl2:sum', '', '', '', '5'],
    ]);
    expect([...defined.values()].map((d) => [d.numberOfKeys, d.lua.split('\n')[0]])).toEqual([
      [1, "local OP, IDEMPOTENT, BATCH_TIME, UNDO_AT, UNDO_DELAY = 'c', true, false"],
      [3, "local OP, IDEMPOTENT, BATCH_TIME, UNDO_AT, UNDO_DELAY = 'v', true, false"],
      [3, "local OP, IDEMPOTENT, BATCH_TIME, UNDO_AT, UNDO_DELAY = 'u', true, false"],
      [2, "local OP, IDEMPOTENT, BATCH_TIME, UNDO_AT, UNDO_DELAY = 'u', false, false"],
    ]);
  });

  it('a malformed idempotent charge throws UnsupportedError before anything is sent', () => {
    const { client, calls } = recordingClient();
    const store = new RedisStore({ client: client as never, batch: false });
    const idempotency = { id: 'short', fingerprint: 'print-01', ttlMs: 60_000, maxIds: 10, maxReplays: 5 };
    expect(() =>
      store.charge(
        { key: 'k', algorithm: tokenBucket({ capacity: 3, refillRate: 1 }), cost: 1, idempotency },
        undefined,
      ),
    ).toThrow(expect.objectContaining({ code: 'RL_UNSUPPORTED' }));
    expect(calls).toEqual([]);
  });
});

describe('RedisStore options', () => {
  it('null is a bad value, not "not given": prefix and buckets name their field', () => {
    const { client } = recordingClient();
    for (const field of ['prefix', 'buckets'] as const) {
      expect(() => new RedisStore({ client: client as never, [field]: null as never })).toThrow(
        expect.objectContaining({ code: 'RL_INVALID_OPTION', field: `RedisStore.${field}` }),
      );
    }
    // undefined is the only "not given".
    const store = new RedisStore({ client: client as never, prefix: undefined, buckets: undefined });
    expect([store.prefix, store.buckets]).toEqual(['rl:', 16_384]);
  });

  it('an array is not an options object', () => {
    const { client } = recordingClient();
    expect(() => new RedisStore([] as never)).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'RedisStore' }),
    );
    expect(() => new RedisStore(Object.assign([], { client }) as never)).toThrow(
      expect.objectContaining({ code: 'RL_INVALID_OPTION', field: 'RedisStore' }),
    );
  });
});

// Which configurations go inline and which by argument, and what each sends.

/** The store's lines before the script's own text (which starts with the prelude's EPSILON). */
const header = (lua: string): string[] =>
  lua.split('\n').slice(
    0,
    lua.split('\n').findIndex((line) => line.startsWith('local EPSILON')),
  );

/** The header the store writes before a script by argument: the operation, the margin, the argument positions (of the compact layout unless given), then `declarations`. */
const POSITIONS =
  'local ARG_OWN, ARG_NOW, ARG_MAX_DELAY, ARG_CHARGED_AT, ARG_DELAY, ARG_ACTUAL, ARG_MAX_DEBT, ARG_IDEM, ARG_FINGERPRINT, ARG_IDEM_TTL, ARG_IDEM_MAX, ARG_IDEM_REPLAYS';
const argumentHeader = (
  declarations: string[],
  positions = `${POSITIONS} = 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13`,
  idemKey = 2,
): string[] => [
  "local OP, IDEMPOTENT, BATCH_TIME, UNDO_AT, UNDO_DELAY = 'c', false, false",
  `local EXPLICIT_NOW_MARGIN_MS, IDEM_KEY = 1000, ${idemKey}`,
  positions,
  ...declarations,
];

/** A distinct token-bucket configuration per `i`. */
const bucket = (i: number) => tokenBucket({ capacity: 10 + i, refillRate: 1, interval: '1m' });

describe('configurations inline and by argument', () => {
  it(`the first ${INLINE_CONFIGURATIONS} distinct configurations go inline; later ones by argument, after every argument of the operation ('' for an absent one)`, async () => {
    const { client, defined: definitions, calls } = recordingClient();
    const defined = () => [...definitions.values()];
    const store = new RedisStore({ client: client as never, buckets: 1, batch: false });
    for (let i = 0; i < INLINE_CONFIGURATIONS; i++)
      await store.charge({ key: 'k', algorithm: bucket(i), cost: 1 }, undefined);
    expect(defined()).toHaveLength(INLINE_CONFIGURATIONS);
    // A new object of a configuration already inline takes no new place and no new script.
    await store.charge({ key: 'k', algorithm: bucket(0), cost: 1 }, undefined);
    expect(defined()).toHaveLength(INLINE_CONFIGURATIONS);
    expect(calls.at(-1)).toEqual(['rl:{#0}:tb', 'k']);

    const beyond = tokenBucket({ capacity: 3, refillRate: 1, interval: '3s' });
    await store.charge({ key: 'k', algorithm: beyond, cost: 1 }, undefined);
    await store.peek('k', beyond, 0, 5);
    expect(header(defined()[INLINE_CONFIGURATIONS]!.lua)).toEqual(
      argumentHeader([
        'local CAPACITY, RATE = tonumber(ARGV[4]), tonumber(ARGV[5])',
        'local HORIZON, STATE_BYTES = tonumber(ARGV[6]), 24',
      ]),
    );
    expect(calls.slice(-2)).toEqual([
      ['rl:{#0}:tb', 'k', '', '', '3', '0.0003333333333333333', '9000'],
      ['rl:{#0}:tb', 'k', '0', '5', '3', '0.0003333333333333333', '9000'],
    ]);
    // An undo sends all five arguments: its numbers come three later; a reservation three: one later.
    await store.giveBack({ key: 'k', algorithm: beyond, cost: 1, chargedAt: 5 }, 7);
    await store.giveBack({ key: 'k', algorithm: beyond, cost: 1 }, undefined);
    expect(header(defined().at(-1)!.lua)[4]).toBe('local HORIZON, STATE_BYTES = tonumber(ARGV[9]), 24');
    await store.charge({ key: 'k', algorithm: beyond, cost: 1, maxDelayMs: 250 }, undefined);
    expect(header(defined().at(-1)!.lua)[4]).toBe('local HORIZON, STATE_BYTES = tonumber(ARGV[7]), 24');
    expect(calls.slice(-3)).toEqual([
      ['rl:{#0}:tb', 'k', '', '7', '', '5', '', '3', '0.0003333333333333333', '9000'],
      ['rl:{#0}:tb', 'k', '', '', '', '', '', '3', '0.0003333333333333333', '9000'],
      ['rl:{#0}:tb', 'k', '', '', '250', '3', '0.0003333333333333333', '9000'],
    ]);
    // Another configuration beyond: the same scripts (consume, peek, undo, reserve), its own numbers.
    await store.charge(
      { key: 'k', algorithm: tokenBucket({ capacity: 7, refillRate: 2, interval: '1s' }), cost: 2 },
      9,
    );
    expect(defined()).toHaveLength(INLINE_CONFIGURATIONS + 4);
    expect(calls.at(-1)).toEqual(['rl:{#0}:tb', 'k', '2', '9', '7', '0.002', '3500']);
    expect(store.scriptCount).toBe(INLINE_CONFIGURATIONS + 4);
  });

  it('keys of their own: the lease id or cost, now, then the constants in sorted order', async () => {
    const { client, defined: definitions, calls } = recordingClient();
    const defined = () => [...definitions.values()];
    const store = new RedisStore({ client: client as never, prefix: 'p:', batch: false });
    for (let i = 0; i < INLINE_CONFIGURATIONS; i++)
      await store.charge({ key: 'k', algorithm: bucket(i), cost: 1 }, undefined);
    await store.charge(
      { key: 'k', algorithm: slidingWindowLog({ limit: 5, window: '1s', countDenied: true }), cost: 1 },
      undefined,
    );
    const leases = concurrency({ limit: 2, lease: '30s' });
    await store.acquire('k', leases, 'lease.1', 4);
    await store.release('k', leases, 'lease.1');
    expect(header(defined()[INLINE_CONFIGURATIONS]!.lua)).toEqual(
      argumentHeader(
        ['local COUNT_DENIED, LIMIT, WINDOW = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])'],
        `${POSITIONS} = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12`,
        3,
      ),
    );
    expect(calls.slice(-3)).toEqual([
      ['p:{k}:swl2', 'p:{k}:swl2:sum', '', '', '1', '5', '1000'],
      ['p:{k}:cc', 'lease.1', '4', '30000', '2'],
      ['p:{k}:cc', 'lease.1', '', '30000', '2'],
    ]);
  });

  it('10,000 configurations of three kinds and every operation: at most one script per inline configuration and operation, plus one per script and operation', async () => {
    const { client, defined: definitions } = recordingClient();
    const store = new RedisStore({ client: client as never, batch: false });
    const kinds = [
      bucket,
      (i: number) => fixedWindow({ limit: 1 + i, window: '1m' }),
      (i: number) => slidingWindowLog({ limit: 1 + i, window: '1m' }),
    ];
    for (let i = 0; i < 10_000; i++) {
      const algorithm = kinds[i % 3]!(i);
      await store.charge({ key: 'k', algorithm, cost: 1 }, undefined);
      await store.peek('k', algorithm, 0, undefined);
      await store.giveBack({ key: 'k', algorithm, cost: 1 }, undefined);
    }
    expect(store.scriptCount).toBe(INLINE_CONFIGURATIONS * 3 + kinds.length * 3);
    expect(definitions.size).toBe(store.scriptCount);
  });
});
