import { concurrency, createLimiter, fixedWindow } from '@rl/core';
import { FakeTimers } from '@rl/core/testing';
import fc from 'fast-check';
import nodeCluster from 'node:cluster';
import { describe, expect, it, vi } from 'vitest';
import { ClusterStore } from './cluster-store.js';
import { serveClusterStore } from './serve.js';
import { inProcessPair, type WorkerTransport } from './transport.js';

const limit = fixedWindow({ limit: 1_000, window: '1h' });
/** node:cluster's `isWorker`, which the tests of the default channel set (a plain, writable property). */
const cluster = nodeCluster as { isWorker: boolean };
const turn = () => new Promise((resolve) => setImmediate(resolve));

/** A worker store and a holder joined in this process. */
function pair() {
  const channel = inProcessPair();
  const server = serveClusterStore({ cluster: false });
  server.connect(channel.holder);
  const store = new ClusterStore({ transport: channel.worker });
  return {
    store,
    server,
    channel,
    close: async () => {
      store.close();
      await server.close();
    },
  };
}

/** A transport whose holder never answers, or whose sends fail. */
function silent(failSends = false): WorkerTransport {
  return {
    send: (_text, sent) => sent(failSends ? new Error('channel closed') : undefined),
    receive() {},
    close() {},
  };
}

describe('ClusterStore: batching', () => {
  it('the calls of one turn go as one message, answered by one', async () => {
    const { store, server, channel, close } = pair();
    const answers = await Promise.all(
      Array.from({ length: 64 }, () => store.charge({ key: 'k', algorithm: limit, cost: 1 }, 0)),
    );
    expect(answers.every((a) => a.decision.allowed)).toBe(true);
    expect(channel.sent()).toBe(1);
    expect(server.counts).toEqual({ messages: 1, calls: 64, refused: 0 });
    await close();
  });

  it('a limiter with 64 requests in flight sends at most one message per 10 decisions', async () => {
    const { store, close } = pair();
    const limiter = createLimiter({ algorithm: limit, store, denyCache: false, timeout: '5s' });
    let next = 0;
    const lane = async () => {
      while (next++ < 2_000) await limiter.consume('k');
    };
    await Promise.all(Array.from({ length: 64 }, lane));
    expect(store.messagesSent).toBeLessThanOrEqual(200);
    expect((await limiter.peek('k')).remaining).toBe(0);
    await close();
  });

  it('a turn of more than maxBatch calls sends several messages', async () => {
    const channel = inProcessPair();
    const server = serveClusterStore({ cluster: false });
    server.connect(channel.holder);
    const store = new ClusterStore({ transport: channel.worker, maxBatch: 10 });
    await Promise.all(Array.from({ length: 25 }, () => store.peek('k', limit, 0, 0)));
    expect(channel.sent()).toBe(3);
    store.close();
    await server.close();
  });
});

describe('ClusterStore: quota leases', () => {
  it('two workers leasing blocks of 10 from one limit of 30 admit 30 in all', async () => {
    const server = serveClusterStore({ cluster: false });
    const limiters = [inProcessPair(), inProcessPair()].map((channel) => {
      server.connect(channel.holder);
      const store = new ClusterStore({ transport: channel.worker });
      return {
        store,
        limiter: createLimiter({
          algorithm: fixedWindow({ limit: 30, window: '1h' }),
          store,
          lease: { units: 10 },
          timeout: '5s',
        }),
      };
    });
    let admitted = 0;
    for (let i = 0; i < 25; i++)
      for (const { limiter } of limiters) if ((await limiter.consume('global')).allowed) admitted++;
    expect(admitted).toBe(30);
    for (const { limiter, store } of limiters) {
      await limiter.close();
      store.close();
    }
    await server.close();
  });
});

describe('ClusterStore: faults are store errors, never hangs', () => {
  it('a holder that does not answer: the calls fail at the timeout', async () => {
    const timers = new FakeTimers();
    const store = new ClusterStore({ transport: silent(), timeout: '2s', timers });
    const charged = store.charge({ key: 'k', algorithm: limit, cost: 1 }, 0);
    await turn();
    await timers.advanceAsync(1_999);
    let settled = false;
    void charged.catch(() => (settled = true));
    await turn();
    expect(settled).toBe(false);
    await timers.advanceAsync(1);
    await expect(charged).rejects.toMatchObject({
      code: 'RL_STORE_ERROR',
      message: expect.stringMatching(/did not answer within 2000 ms/),
    });
    store.close();
  });

  it('a holder that answers after the timeout: what it granted is given back (a failed call leaves nothing taken)', async () => {
    // The holder stalls (a long pause of its event loop) past the store's timeout, then answers.
    const channel = inProcessPair();
    const server = serveClusterStore({ cluster: false });
    const held: string[] = [];
    let stalled = true;
    server.connect({
      connection: { send: (text) => (stalled ? held.push(text) : channel.holder.connection.send(text)) },
      receive: (listener) => channel.holder.receive(listener),
    });
    const timers = new FakeTimers();
    const store = new ClusterStore({ transport: channel.worker, timeout: '2s', timers });
    const permits = concurrency({ limit: 3, lease: '1m' });
    const rate = fixedWindow({ limit: 5, window: '1h' });
    const calls: Promise<unknown>[] = [
      ...[1, 2, 3].map((i) => store.acquire('p', permits, `lease-${i}`, 0)),
      store.charge({ key: 'r', algorithm: rate, cost: 1 }, 0),
      store.charge({ key: 'r', algorithm: rate, cost: 1, maxDelayMs: 0 }, 0),
      ...store.chargeAll(
        [
          { charge: { key: 'r', algorithm: rate, cost: 1 }, now: 0 },
          { charge: { key: 'r2', algorithm: rate, cost: 2 }, now: 0 },
        ],
        { holdMs: Infinity },
      ),
      // Idempotent: granted late, it stays; its retry with the id is answered by it.
      store.charge(
        {
          key: 'r',
          algorithm: rate,
          cost: 1,
          idempotency: { id: 'once', fingerprint: 'f', ttlMs: 60_000, maxIds: 100, maxReplays: 3 },
        },
        0,
      ),
    ];
    for (const call of calls) call.catch(() => {});
    await vi.waitFor(() => expect(held).toHaveLength(1));
    await timers.advanceAsync(2_000);
    const failed = await Promise.allSettled(calls);
    expect(failed.map((f) => f.status)).toEqual(Array(calls.length).fill('rejected'));
    // The holder wakes: its answers (every call granted) come after the timeout.
    stalled = false;
    for (const text of held.splice(0)) channel.holder.connection.send(text);
    await vi.waitFor(async () => {
      expect((await store.peek('r', rate, 0, 0)).remaining).toBe(4);
      expect((await store.peek('r2', rate, 0, 0)).remaining).toBe(5);
      expect((await store.acquire('p', permits, 'after', 0)).remaining).toBe(2);
      await store.release('p', permits, 'after');
    });
    store.close();
    await server.close();
  });

  it('a message that cannot be sent fails its calls at once', async () => {
    const store = new ClusterStore({ transport: silent(true) });
    await expect(store.peek('k', limit, 0, 0)).rejects.toMatchObject({
      code: 'RL_STORE_ERROR',
      message: expect.stringMatching(/could not send/),
    });
    store.close();
  });

  it('a limiter on it answers with its failure policy', async () => {
    const store = new ClusterStore({ transport: silent(true) });
    const denying = createLimiter({ algorithm: limit, store });
    const allowing = createLimiter({ algorithm: limit, store, onStoreError: 'allow' });
    expect(await denying.consume('k')).toMatchObject({ allowed: false, reason: 'store-error' });
    expect(await allowing.consume('k')).toMatchObject({ allowed: true, reason: 'store-error' });
    store.close();
  });

  it('closed: the calls waiting and every later one fail with StoreClosedError', async () => {
    const store = new ClusterStore({ transport: silent() });
    const waiting = store.peek('k', limit, 0, 0);
    store.close();
    await expect(waiting).rejects.toMatchObject({ code: 'RL_STORE_CLOSED' });
    await expect(store.peek('k', limit, 0, 0)).rejects.toMatchObject({ code: 'RL_STORE_CLOSED' });
  });

  it('the IPC channel by default: outside a cluster worker, or under PM2, the store says to give a socket', () => {
    const send = process.send;
    const isWorker = cluster.isWorker;
    // What the process is (PM2's variables, a node:cluster worker, an IPC channel), and what `new ClusterStore()` says.
    const cases: [pm2: string | undefined, worker: boolean, channel: boolean, expected: RegExp | 'served'][] = [
      [undefined, false, false, /outside a node:cluster worker/],
      // A child of fork(): a channel, to a parent that serves no store.
      [undefined, false, true, /outside a node:cluster worker/],
      [undefined, true, true, 'served'],
      // PM2's cluster mode: its instances are workers of PM2's own primary.
      ['cluster_mode', true, true, /under PM2/],
      // PM2's fork mode: a plain app's channel goes to PM2's daemon; a node:cluster app's workers are the app's.
      ['fork_mode', false, true, /under PM2/],
      ['fork_mode', true, true, 'served'],
    ];
    try {
      for (const [pm2, worker, channel, expected] of cases) {
        if (pm2 === undefined) delete process.env.pm_id;
        else [process.env.pm_id, process.env.exec_mode] = ['0', pm2];
        cluster.isWorker = worker;
        process.send = channel ? () => true : undefined;
        const made = () => new ClusterStore().close();
        if (expected === 'served') expect(made, `${pm2} ${worker}`).not.toThrow();
        else
          expect(made, `${pm2} ${worker} ${channel}`).toThrow(new RegExp(`ClusterStore\\.socket.*${expected.source}`));
        new ClusterStore({ transport: silent() }).close(); // a transport of your own: no channel needed
      }
    } finally {
      process.send = send;
      cluster.isWorker = isWorker;
      delete process.env.pm_id;
      delete process.env.exec_mode;
    }
  });

  it('twelve stores in one worker (one per middleware): no listener-leak warning, and the limit back after close', () => {
    const send = process.send;
    const isWorker = cluster.isWorker;
    const limit = process.getMaxListeners();
    try {
      [cluster.isWorker, process.send] = [true, () => true];
      const stores = Array.from({ length: 12 }, () => new ClusterStore());
      // Node warns when a listener is added past the limit: the limit keeps above the count.
      expect(process.listenerCount('message')).toBeLessThanOrEqual(process.getMaxListeners());
      for (const store of stores) store.close();
      expect(process.getMaxListeners()).toBe(limit);
    } finally {
      [cluster.isWorker, process.send] = [isWorker, send];
    }
  });

  it('the connection lost while calls wait for the end of their turn: they fail, none is sent, and the store goes on', async () => {
    let lose!: () => void;
    const sent: string[] = [];
    const store = new ClusterStore({
      transport: {
        ...silent(),
        send: (text, done) => (sent.push(text), done()),
        lost: (listener) => (lose = listener),
      },
    });
    const queued = [store.charge({ key: 'k', algorithm: limit, cost: 1 }, 0), store.peek('k', limit, 0, 0)];
    lose();
    for (const call of queued) await expect(call).rejects.toMatchObject({ code: 'RL_STORE_ERROR' });
    await turn(); // the turn's end, where its message would have gone
    expect(sent).toEqual([]);
    const later = store.peek('k', limit, 0, 0);
    await turn();
    expect(sent).toHaveLength(1); // the next turn's call is sent
    store.close();
    await expect(later).rejects.toMatchObject({ code: 'RL_STORE_CLOSED' });
  });

  it('tells its transport when calls start and stop waiting for answers (a socket keeps the process alive only then)', async () => {
    const channel = inProcessPair();
    const server = serveClusterStore({ cluster: false });
    server.connect(channel.holder);
    const told: boolean[] = [];
    const store = new ClusterStore({ transport: { ...channel.worker, waiting: (calls) => told.push(calls) } });
    await Promise.all([store.peek('k', limit, 0, 0), store.peek('k', limit, 0, 0)]);
    expect(told).toEqual([true, false]);
    await store.peek('k', limit, 0, 0);
    expect(told).toEqual([true, false, true, false]);
    store.close();
    await server.close();
  });

  it('bad options name the option', () => {
    expect(() => new ClusterStore({ maxBatch: 0 })).toThrow(/ClusterStore\.maxBatch/);
    expect(() => new ClusterStore({ socket: '/tmp/x', transport: silent() })).toThrow(/ClusterStore\.transport/);
    expect(() => new ClusterStore({ timeout: -1 as never })).toThrow(/ClusterStore\.timeout/);
    // A Unix socket's path is bounded (108 bytes on Linux with its NUL): a longer one would be cut short.
    const long = `/tmp/${'x'.repeat(120)}.sock`;
    expect(() => new ClusterStore({ socket: long })).toThrow(/ClusterStore\.socket.*at most 10[37] bytes/);
    expect(() => serveClusterStore({ socket: long })).toThrow(/serveClusterStore\.socket.*at most 10[37] bytes/);
    expect(() => serveClusterStore({ store: {} as never })).toThrow(/serveClusterStore\.store/);
  });
});

describe('ClusterStore: resets heard by every worker', () => {
  it('a reset by one worker reaches the other worker before the caller’s own answer resolves', async () => {
    const server = serveClusterStore({ cluster: false });
    const [a, b] = [inProcessPair(), inProcessPair()];
    server.connect(a.holder);
    server.connect(b.holder);
    const first = new ClusterStore({ transport: a.worker });
    const second = new ClusterStore({ transport: b.worker });
    const heardByFirst: (string | undefined)[] = [];
    const heardBySecond: (string | undefined)[] = [];
    const listenFirst = (key: string | undefined) => heardByFirst.push(key);
    const listenSecond = (key: string | undefined) => heardBySecond.push(key);
    first.watchResets(listenFirst);
    second.watchResets(listenSecond);
    await second.peek('k', limit, 0, 0); // the second worker is known to the holder
    await first.reset('k', limit);
    expect(heardByFirst).toEqual(['k']);
    await turn();
    expect(heardBySecond).toEqual(['k']);
    first.close();
    second.close();
    await server.close();
  });
});

describe('ClusterStore: one limit for every worker (property)', () => {
  it('whatever the workers and their costs, the admitted units are the limit’s at most, and the holder counts exactly them', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(fc.integer({ min: 1, max: 3 }), { maxLength: 12 }), { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 3, max: 20 }), // at least the largest cost
        async (workers, limitUnits) => {
          const server = serveClusterStore({ cluster: false });
          const algorithm = fixedWindow({ limit: limitUnits, window: '1h' });
          const stores = workers.map(() => {
            const channel = inProcessPair();
            server.connect(channel.holder);
            return new ClusterStore({ transport: channel.worker });
          });
          const clock = () => 1_000;
          const admitted = await Promise.all(
            workers.map(async (costs, i) => {
              const limiter = createLimiter({ algorithm, store: stores[i]!, clock, timeout: '5s', denyCache: false });
              const decisions = await Promise.all(costs.map((cost) => limiter.consume('k', cost)));
              return decisions.reduce((sum, d, j) => sum + (d.allowed ? costs[j]! : 0), 0);
            }),
          );
          const total = admitted.reduce((a, b) => a + b, 0);
          expect(total).toBeLessThanOrEqual(limitUnits);
          expect(server.store.peek('k', algorithm, 0, 1_000).remaining).toBe(limitUnits - total);
          for (const store of stores) store.close();
          await server.close();
        },
      ),
      { numRuns: 50 },
    );
  });
});
