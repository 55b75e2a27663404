import { tokenBucket } from '@rl/core';
import { FakeTimers } from '@rl/core/testing';
import { withRateLimit } from '@rl/hono';
import { MemoryStore } from '@rl/store-memory';
import { afterAll, describe, expect, it } from 'vitest';
import { createFetch } from '../src/index.js';

const store = new MemoryStore({ sweepInterval: false });
afterAll(() => store.close());

/**
 * A client sending 15 requests a second for 60 virtual seconds to an rl server whose token bucket
 * admits 10 a second (capacity 10): 150 % of its rate. Retries off, so that every 429 the server
 * answers is counted once. The waits are let long enough (`maxRetryAfter`, `maxElapsed`) for the
 * requests held by pacing to be sent when their turn comes rather than forced through.
 */
async function run(pacing: boolean, format: 'draft-8' | 'draft-7' | 'draft-6' | 'legacy') {
  const timers = new FakeTimers(0);
  const wall = () => 1.8e12 + timers.now();
  const denials: number[] = [];
  const server = withRateLimit(() => new Response('ok'), {
    limits: [{ name: 'api', algorithm: tokenBucket({ capacity: 10, refillRate: 10, interval: '1s' }) }],
    key: () => `paced-${pacing}-${format}`,
    headers: format,
    store,
    clock: wall,
  });
  const fetch = async (request: Request) => {
    const response = await server(request);
    if (response.status === 429) denials.push(timers.now());
    return response;
  };
  // rl writes the legacy reset as an epoch time from the system's wall clock, whatever the limiter's clock.
  const client = createFetch({
    fetch,
    timers,
    clock: format === 'legacy' ? Date.now : wall,
    retries: 0,
    pacing,
    maxRetryAfter: '10m',
    maxElapsed: '10m',
  });
  const calls: Promise<Response>[] = [];
  for (let i = 0; i < 900; i++) {
    await timers.advanceAsync(Math.round((i * 1000) / 15) - timers.now());
    calls.push(client('http://api.test/items'));
  }
  let settled = false;
  void Promise.all(calls).then(() => (settled = true));
  for (let i = 0; !settled && i < 6_000; i++) await timers.advanceAsync(100);
  const statuses = await Promise.all(calls);
  return { sent: calls.length, ok: statuses.filter((r) => r.status === 200).length, denials };
}

describe('paced: 150 % of a token bucket for 60 virtual seconds', () => {
  it.each(['draft-8', 'draft-7', 'draft-6', 'legacy'] as const)(
    '%s: at most one 429 per window once the fields are seen, against hundreds without pacing',
    async (format) => {
      const paced = await run(true, format);
      const unpaced = await run(false, format);
      expect(paced.sent).toBe(900);
      // The bucket's window is 1 s (capacity / rate): 60 windows in the minute.
      expect(paced.denials.length).toBeLessThanOrEqual(60);
      expect(unpaced.denials.length).toBeGreaterThan(250);
      expect(paced.ok).toBe(900 - paced.denials.length);
    },
  );
});
