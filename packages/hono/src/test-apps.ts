/** Apps for hono's own tests (not part of the package: index.ts does not export it). */
import { Hono } from 'hono';
import { keysSeen, type KeysSeen } from '@rl/test-support';
import { rateLimit, type RateLimitOptions } from './index.js';

/**
 * A Hono app that answers `GET /` with `ok` behind one `rateLimit` of `options` (at a fixed clock
 * unless they give one), and the keys that limit decided on.
 */
export function appSeeingKeys(options: RateLimitOptions): { app: Hono; seen: KeysSeen } {
  const seen = keysSeen();
  const app = new Hono();
  app.use(rateLimit({ clock: () => 1_000_000, ...options, ...seen.reporting }));
  app.get('/', (c) => c.text('ok'));
  return { app, seen };
}
