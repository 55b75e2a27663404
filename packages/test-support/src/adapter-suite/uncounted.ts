import { expect } from 'vitest';
import type { MountedApp } from './adapter.js';

/**
 * Checks that requests to `path` go through a limit of 1 uncounted (skipped, or left to another
 * handler): three of them each answer `status` with no RateLimit header, and `/` is still admitted
 * after them. For any app with a `request` (a suite's app, or `injectClient` over Fastify's `inject`).
 */
export async function expectUncounted(app: Pick<MountedApp, 'request'>, path: string, status: number): Promise<void> {
  for (let i = 0; i < 3; i++) {
    const res = await app.request(path);
    expect(res.status, `${path}, request ${i + 1}`).toBe(status);
    expect(res.headers['ratelimit'], `${path}, request ${i + 1}`).toBeUndefined();
  }
  expect((await app.request('/')).status, '/ after them').toBe(200);
}
