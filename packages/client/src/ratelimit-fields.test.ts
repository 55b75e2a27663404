import { fixedWindow, type HeaderFormat } from '@rl/core';
import { withRateLimit } from '@rl/hono';
import { MemoryStore } from '@rl/store-memory';
import { afterAll, describe, expect, it } from 'vitest';
import { partitionReports } from './ratelimit-fields.js';

const NOW = Date.UTC(2026, 11, 6, 12, 0, 0);
const store = new MemoryStore({ sweepInterval: false });
afterAll(() => store.close());

/** The fields rl itself writes in `format` on the `n`-th request to a limit of 2 per minute. */
async function rlFields(format: HeaderFormat, n: number): Promise<Headers> {
  const handler = withRateLimit(() => new Response('ok'), {
    limits: [{ name: 'per-minute', algorithm: fixedWindow({ limit: 2, window: '1m' }) }],
    key: () => `fields-${format}`,
    headers: format,
    store,
    clock: () => NOW,
  });
  let response = await handler(new Request('http://127.0.0.1/'));
  for (let i = 1; i < n; i++) response = await handler(new Request('http://127.0.0.1/'));
  return response.headers;
}

describe('partitionReports reads what rl writes', () => {
  it.each([
    ['draft-8', 'per-minute'],
    ['draft-7', ''],
    ['draft-6', ''],
  ] as const)('%s: units left, then none until the window ends', async (format, partition) => {
    expect(partitionReports(await rlFields(format, 1), NOW)).toEqual([{ partition, remaining: 1, resetMs: 60_000 }]);
    expect(partitionReports(await rlFields(format, 2), NOW)).toEqual([{ partition, remaining: 0, resetMs: 60_000 }]);
  });

  it('legacy: an epoch time in whole seconds, read against the wall clock', async () => {
    // rl writes the legacy reset from the system's wall clock, whatever the limiter's clock.
    const [report] = partitionReports(await rlFields('legacy', 2), Date.now());
    expect(report).toMatchObject({ partition: '', remaining: 0 });
    expect(Math.abs(report!.resetMs! - 60_000)).toBeLessThanOrEqual(1000);
  });
});

describe('partitionReports', () => {
  const read = (fields: Record<string, string>) => partitionReports(new Headers(fields), NOW);

  it.each([
    [
      'several policies (draft 8)',
      { ratelimit: '"a";r=3;t=10, "b";r=0;t=60' },
      [
        ['a', 3, 10_000],
        ['b', 0, 60_000],
      ],
    ],
    ['a partition key (draft 10)', { ratelimit: '"a";r=0;t=5;pk=:AQI=:' }, [['a;0102', 0, 5000]]],
    ['no t', { ratelimit: '"a";r=2' }, [['a', 2, undefined]]],
    ['draft 7 without reset', { ratelimit: 'limit=5, remaining=4' }, [['', 4, undefined]]],
    ['legacy delta seconds', { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '30' }, [['', 0, 30_000]]],
    [
      'legacy epoch in the past',
      { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(NOW / 1000 - 5) },
      [['', 0, 0]],
    ],
    ['draft 8 before draft 6', { ratelimit: '"a";r=1;t=1', 'ratelimit-remaining': '9' }, [['a', 1, 1000]]],
    ['a bad draft 8 member left out', { ratelimit: '"a";r=-1;t=1, "b";r=1;t=1.5, "c";r=2;t=3' }, [['c', 2, 3000]]],
    ['a name given twice', { ratelimit: '"a";r=1;t=1, "a";r=0;t=9, "b";r=0;t=2' }, [['b', 0, 2000]]],
  ])('%s', (_name, fields, expected) => {
    expect(read(fields)).toEqual(
      expected.map(([partition, remaining, resetMs]) => ({ partition, remaining, resetMs })),
    );
  });

  it('reads no legacy epoch against a wall clock that gave no number', () => {
    const fields = new Headers({ 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(NOW / 1000 + 5) });
    expect(partitionReports(fields, NaN)).toEqual([]);
  });

  it.each([
    ['none', {}],
    ['not a structured field', { ratelimit: 'r=1;;t=2 "' }],
    ['draft 7 with a negative reset', { ratelimit: 'limit=5, remaining=0, reset=-1' }],
    ['draft 7 with a string', { ratelimit: 'limit=5, remaining="0"' }],
    ['draft 6 past 2^31 seconds', { 'ratelimit-remaining': '0', 'ratelimit-reset': '9999999999' }],
    ['draft 6 not an integer', { 'ratelimit-remaining': 'zero', 'ratelimit-reset': '1' }],
    ['draft 6 twice', { 'ratelimit-remaining': '0, 1', 'ratelimit-reset': '1' }],
    ['draft 7 with remaining twice', { ratelimit: 'limit=100, remaining=0, reset=30, remaining=50' }],
    ['draft 7 with reset twice', { ratelimit: 'limit=100, remaining=5, reset=30, reset=1' }],
    [
      'legacy epoch past 2^31 seconds from now',
      { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '999999999999999' },
    ],
  ])('treats %s as no report', (_name, fields) => {
    expect(read(fields)).toEqual([]);
  });
});
