import { expect, it } from 'vitest';
import { fixedWindow, tokenBucket } from '@rl/core';
import { captureWarnings } from '../capture.js';
import { members } from '../http-client.js';
import type { SuiteContext } from './context.js';

/**
 * Two rl middlewares with a limit of the same name on one request (the README's old per-route cost:
 * a second middleware with the same options) count the request twice: one `RL_DOUBLE_COUNT` warning
 * per pair of middlewares, naming the limit and the fix.
 */
export function doubleCountTests(t: SuiteContext): void {
  const bucket = { capacity: 20, refillRate: 10 };

  it('warns RL_DOUBLE_COUNT once when two middlewares with the same limit name run on one request', async () => {
    await captureWarnings('RL_DOUBLE_COUNT', async (warnings) => {
      const app = await t.open({
        middlewares: [{ algorithm: tokenBucket(bucket) }, { algorithm: tokenBucket(bucket), cost: () => 5 }],
      });
      const first = await app.request('/export');
      // What the warning is about: 1 + 5 units from two buckets, and the policy listed twice.
      expect(members(first.headers['ratelimit'])).toEqual([
        { name: '20-in-2s', params: { r: 19, t: 1 } },
        { name: '20-in-2s', params: { r: 15, t: 1 } },
      ]);
      for (let i = 0; i < 3; i++) expect((await app.request('/export')).status).toBe(200);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!).toMatch(/^RL_DOUBLE_COUNT: /);
      expect(warnings[0]!).toContain('"20-in-2s"');
      expect(warnings[0]!).toMatch(/one limit, with a cost by route/);
    });
  });

  it('warns for each pair of middlewares, and not for limits with distinct names', async () => {
    await captureWarnings('RL_DOUBLE_COUNT', async (warnings) => {
      const algorithm = fixedWindow({ limit: 100, window: '1m' });
      const app = await t.open({
        middlewares: [
          { algorithm },
          { limits: [{ name: 'export', algorithm }] },
          { algorithm: fixedWindow({ limit: 10, window: '1m' }) },
          { algorithm },
        ],
      });
      for (let i = 0; i < 3; i++) expect((await app.request('/')).status).toBe(200);
      // Only the last middleware repeats a name ("100-in-1m", of the first one, two middlewares
      // earlier): one pair, one warning. "export" is the same algorithm under a name of its own.
      expect(warnings.map((w) => w.match(/"[^"]+"/)![0])).toEqual(['"100-in-1m"']);
    });
  });
}
