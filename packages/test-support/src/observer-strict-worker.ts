/**
 * Run by observer-strict.test.ts in a Node of its own with `--unhandled-rejections=strict`: a limiter
 * whose every observer method is `async` and rejects, through decisions and a failing store (store
 * errors, the circuit opening; holds go through the same guard, and the adapter suite holds requests
 * with such an observer). Prints `survived` and the warning codes when the process is still alive
 * after all of it.
 */
import { createLimiter, tokenBucket, type Observer } from '@rl/core';
import { TestStore } from '@rl/core/testing';
import { MemoryStore } from '@rl/store-memory';

const codes: string[] = [];
process.on('warning', (warning) => codes.push((warning as Error & { code?: string }).code ?? warning.name));
const reject = (what: string) => async (): Promise<void> => {
  throw new Error(`${what} observer down`);
};
const observer = (): Observer => ({
  decision: reject('decision'),
  storeError: reject('storeError'),
  circuit: reject('circuit'),
  hold: reject('hold'),
});

const limiter = createLimiter({
  algorithm: tokenBucket({ capacity: 2, refillRate: 1 }),
  store: new MemoryStore(),
  observer: observer(),
});
for (let i = 0; i < 4; i++) await limiter.consume('k');

const failing = new TestStore({ answers: 'async' });
failing.failure = new Error('store down');
const outage = createLimiter({
  algorithm: tokenBucket({ capacity: 2, refillRate: 1 }),
  store: failing,
  prefix: 'outage',
  observer: observer(),
  storeFailureThreshold: 1,
  onStoreError: 'allow',
});
for (let i = 0; i < 3; i++) await outage.consume('k');

// Let every rejection settle (and a strict process end, were one unhandled): no timer is involved
// (the observers reject at once, the failing store answers on a promise), so one turn of the event
// loop is enough: Node ends the turn by running the microtasks, the \`process.nextTick\` queue (where
// warnings are emitted) and its check for unhandled rejections, before \`setImmediate\`'s callback.
await new Promise((resolve) => setImmediate(resolve));
console.log(JSON.stringify({ survived: true, codes }));
