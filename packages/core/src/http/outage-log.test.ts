/** A store outage is logged once when it starts and once when the store answers again, not per request. */
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import type { Limiter } from '../limiter/index.js';
import { OUTAGE_QUIET_MS, OutageLog, type OutageLogger } from './outage-log.js';

function setup() {
  const lines: [string, string][] = [];
  const logger: OutageLogger = {
    warn: (_d, message) => lines.push(['warn', message]),
    info: (_d, message) => lines.push(['info', message]),
  };
  let now = 0;
  const limiter = new EventEmitter() as unknown as Limiter;
  new OutageLog([{ limiter, name: 'api' }], logger, () => now);
  const fail = () =>
    limiter.emit('storeError', { error: new Error('ECONNREFUSED'), reason: 'store-error', key: 'k', action: 'deny' });
  const close = () => limiter.emit('circuit', { state: 'closed', reason: undefined, domain: undefined });
  return { lines, fail, close, at: (t: number) => (now = t) };
}

describe('OutageLog', () => {
  it('logs the first failure, then nothing until the circuit closes, then the recovery', () => {
    const { lines, fail, close, at } = setup();
    for (const t of [0, 10, 20_000, 40_000]) {
      at(t);
      fail();
    }
    close();
    close(); // a second close without an outage says nothing
    at(41_000);
    fail();
    expect(lines).toEqual([
      [
        'warn',
        'rl: the store of limit "api" failed (store-error: ECONNREFUSED); requests are denied (503) while it fails. Logged once per outage.',
      ],
      ['info', 'rl: the store of limit "api" answers again.'],
      ['warn', expect.stringMatching(/failed/)],
    ]);
  });

  it('starts a new outage after a quiet period without failures', () => {
    const { lines, fail, at } = setup();
    fail();
    at(OUTAGE_QUIET_MS - 1);
    fail();
    at(2 * OUTAGE_QUIET_MS);
    fail();
    expect(lines.map(([level]) => level)).toEqual(['warn', 'warn']);
  });
});
