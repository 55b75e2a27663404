/**
 * A node:cluster worker of node-cluster.test.ts (started by cluster-primary.ts): runs the job its
 * primary names in `RL_CLUSTER_JOB` through a `ClusterStore` (or, `socket-holder`, serves one on a
 * socket) and sends its figures to the primary.
 */
import { concurrency, createLimiter, fixedWindow } from '@rl/core';
import { ClusterStore, serveClusterStore } from '../../src/index.js';

export interface CountFigures {
  readonly admitted: number;
  readonly decisions: number;
  /** Decisions that did not come from the store (a timeout, a store error): 0 expected. */
  readonly notFromStore: number;
  readonly messages: number;
}

const job = process.env.RL_CLUSTER_JOB;
const store = new ClusterStore({ timeout: '20s' });
const options = { store, timeout: '20s', denyCache: false } as const;

/** `total` consumes of one key, `inFlight` at a time. */
async function count(total: number, inFlight: number): Promise<CountFigures> {
  const limiter = createLimiter({
    ...options,
    algorithm: fixedWindow({ limit: 1_000, window: '1h' }),
    prefix: 'count',
  });
  let admitted = 0;
  let notFromStore = 0;
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < total) {
      next++;
      const decision = await limiter.consume('one-key');
      if (decision.allowed) admitted++;
      if (decision.reason !== undefined) notFromStore++;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return { admitted, decisions: total, notFromStore, messages: store.messagesSent };
}

const permits = createLimiter({ ...options, algorithm: concurrency({ limit: 3, lease: '3s' }), prefix: 'permits' });
const rate = createLimiter({ ...options, algorithm: fixedWindow({ limit: 10, window: '1h' }), prefix: 'rate' });

async function run(): Promise<unknown> {
  if (job === 'count') return count(10_000, 64);
  if (job === 'hold') {
    // Takes every permit and 5 units, then waits to be killed.
    const acquiredAt = Date.now();
    const held = await Promise.all([permits.acquire('k'), permits.acquire('k'), permits.acquire('k')]);
    const charged = await rate.consume('k', 5);
    return { held: held.filter((d) => d.allowed).length, charged: charged.allowed, acquiredAt };
  }
  if (job === 'after') {
    const started = Date.now();
    const first = await permits.acquire('k');
    const remaining = (await rate.peek('k')).remaining;
    let freedAt = -1;
    while (Date.now() - started < 5_000) {
      const again = await permits.acquire('k');
      if (again.allowed) {
        freedAt = Date.now();
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    return { deniedAtOnce: !first.allowed, remaining, freedAt };
  }
  if (job === 'two-stores') {
    // Two stores share this worker's IPC channel, each numbering its calls from 1: a limit of 1,000 on
    // one, of 3 on the other, 10 requests through both in each turn.
    const second = new ClusterStore({ timeout: '20s' });
    const roomy = createLimiter({ ...options, algorithm: fixedWindow({ limit: 1_000, window: '1h' }), prefix: 'a' });
    const tight = createLimiter({
      ...options,
      store: second,
      algorithm: fixedWindow({ limit: 3, window: '1h' }),
      prefix: 'b',
    });
    let admittedRoomy = 0;
    let admittedTight = 0;
    for (let i = 0; i < 10; i++) {
      const [a, b] = await Promise.all([roomy.consume('k'), tight.consume('k')]);
      if (a.allowed) admittedRoomy++;
      if (b.allowed) admittedTight++;
    }
    second.close();
    return { admittedRoomy, admittedTight };
  }
  if (job === 'socket-holder') {
    // A holder on the socket the primary names, started in every worker at once: one listens.
    const holder = serveClusterStore({ socket: process.env.RL_CLUSTER_SOCKET! });
    process.on('message', (message) => void (message === 'exit' && holder.close()));
    return holder.listening.then(
      () => ({ listening: true }),
      (error: NodeJS.ErrnoException) => ({ listening: false, code: error.code }),
    );
  }
  throw new Error(`unknown job ${job}`);
}

run().then(
  (figures) => process.send!({ figures }),
  (error: unknown) => process.send!({ error: String(error) }),
);
process.on('message', (message) => {
  if (message === 'exit') {
    store.close();
    process.disconnect();
  }
});
