import { describe, expect, it } from 'vitest';
import { tokenBucket } from '../algorithms/token-bucket.js';
import { leakyBucket } from '../algorithms/leaky-bucket.js';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { slidingWindowLog } from '../algorithms/sliding-window-log.js';
import { slidingWindowCounter } from '../algorithms/sliding-window-counter.js';
import { FakeTimers } from '../testing/fake-timers.js';
import { TestStore } from '../testing/test-store.js';
import { createLimiter } from './limiter.js';
import type { Algorithm } from '../algorithm.js';

const tick = () => new Promise((resolve) => setImmediate(resolve));

async function saturate(algorithm: Algorithm, ms: number, perMs: number, instances = 4, units = 50) {
  const timers = new FakeTimers();
  const store = new TestStore({ answers: 'manual' });
  const clock = (): number => timers.now();
  const log: string[] = [];
  const limiters = Array.from({ length: instances }, (_, i) => {
    const mine = Object.create(store, {
      charge: {
        value: (c: any, now: any) => {
          const sent = timers.now();
          const a = store.charge(c, now);
          void Promise.resolve(a).then((x) => log.push(`${i} ${sent} ${timers.now()} cost=${c.cost} ${x.decision.allowed} R=${x.decision.retryAfterMs} rem=${x.decision.remaining}`));
          return a;
        },
      },
    });
    return createLimiter({ algorithm, store: mine, clock, timers, timeout: false, lease: { units } });
  });
  let admitted = 0;
  let local = 0;
  for (let t = 0; t < ms; t++) {
    for (const l of limiters)
      for (let i = 0; i < perMs; i++)
        void l.consume('k').then((d) => {
          if (d.allowed) admitted++;
          if (d.reason === 'deny-cache') local++;
        });
    await tick();
    store.answerAll();
    await tick();
    store.answerAll();
    await tick();
    timers.advance(1);
  }
  const charges = store.calls.filter((c) => c.startsWith('charge')).length;
  if (process.env.SAT_LOG) console.log(log.slice(0, 80).join('\n'));
  return { admitted, charges, local, perAdmitted: charges / admitted };
}

describe('saturation', () => {
  it.each([
    ['tb', tokenBucket({ capacity: 200, refillRate: 1000 })],
    ['lb', leakyBucket({ capacity: 200, leakRate: 1000 })],
    ['fw', fixedWindow({ limit: 200, window: 200 })],
    ['swl', slidingWindowLog({ limit: 200, window: 200 })],
    ['swc', slidingWindowCounter({ limit: 200, window: 200 })],
  ] as const)('%s', async (name, alg) => {
    const r = await saturate(alg, 2000, 5);
    console.log(name, r);
  });
});
