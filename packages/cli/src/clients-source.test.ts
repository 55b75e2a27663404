import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { argv } from './testing/argv.js';
import { rl } from './testing/run-cli.js';
import type { ClientStats, RetryMode } from './client-stats.js';
import { simulateClients } from './clients-source.js';
import { seconds } from './format.js';
import { parseLimit } from './limits.js';
import { parsePattern, patternTraffic } from './pattern.js';
import type { SimulationReport } from './simulate.js';

/** The rows of a table of the README ("Retry storms") under `header`: the mode, and its other cells. */
function readmeRows(header: string): [string, string[]][] {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const lines = readme.slice(readme.indexOf(header)).split('\n').slice(2);
  const rows = lines.slice(
    0,
    lines.findIndex((l) => !l.startsWith('|')),
  );
  expect(rows.length).toBeGreaterThan(1);
  return rows.map((row) => {
    const [mode, ...cells] = row
      .split('|')
      .slice(1, -1)
      .map((c) => c.trim());
    return [mode!.replace(/`/g, ''), cells];
  });
}

/** The seeds' herd: 10,000 clients at one instant against a fixed window of 1,000 a second, slices of 100 ms. */
function herd(retry: RetryMode): ClientStats {
  const report = simulateClients(
    patternTraffic(parsePattern('burst 10000 at 0s')),
    [parseLimit('fixedWindow(limit=1000,window=1s)')],
    { clients: 10_000, retry, retries: 20, sliceMs: 100 },
  );
  return report.limits[0]!.clients!;
}

describe('simulateClients: the herd (10,000 clients denied at one instant, fixedWindow(limit=1000,window=1s), Retry-After: 1)', () => {
  const runs = Object.fromEntries(
    (['none', 'immediate', 'retry-after', 'jitter', 'paced'] as const).map((mode) => [mode, herd(mode)]),
  ) as Record<RetryMode, ClientStats>;

  it.each(readmeRows('| `--retry` | attempts | admitted | 429s | 429s per admitted |'))(
    "the README's row of %s",
    (mode, cells) => {
      const c = runs[mode as RetryMode];
      const wave = c.secondWave;
      expect(cells).toEqual([
        String(c.attempts),
        String(c.admitted),
        String(c.denied),
        c.deniedPerAdmitted!.toFixed(2),
        String(c.peakRetrySlice),
        wave === null
          ? '—'
          : wave.slices === 1
            ? `${wave.peak} at ${seconds(wave.firstMs)}, 1 slice`
            : `${seconds(wave.firstMs).slice(0, -2)}–${seconds(wave.lastMs)}, ${wave.slices} slices: peak ${wave.peak}, mean ${Math.round(wave.mean)}`,
        seconds(c.lastThroughMs!),
      ]);
    },
  );

  it('retry-after: the whole second wave lands in one slice (9,000 retries at 1 s)', () => {
    expect(runs['retry-after'].secondWave).toEqual({ firstMs: 1000, lastMs: 1000, slices: 1, peak: 9000, mean: 9000 });
  });

  it('jitter: the second wave is spread over the next second, its peak slice at most 2× the mean', () => {
    const wave = runs.jitter.secondWave!;
    expect(wave.firstMs).toBeGreaterThanOrEqual(1000);
    expect(wave.lastMs).toBeLessThanOrEqual(2000);
    expect(wave.slices).toBeGreaterThanOrEqual(10);
    expect(wave.peak).toBeLessThanOrEqual(2 * wave.mean);
  });

  it('jitter: 429s per admitted request at least 5× fewer than immediate retries', () => {
    expect(runs.immediate.deniedPerAdmitted! / runs.jitter.deniedPerAdmitted!).toBeGreaterThanOrEqual(5);
  });
});

describe('simulateClients: paced (one client at 150 % of tokenBucket(capacity=10,refillRate=10) for 60 virtual seconds)', () => {
  const run = (retry: RetryMode) =>
    simulateClients(
      patternTraffic(parsePattern('15/s for 60s')),
      [parseLimit('tokenBucket(capacity=10,refillRate=10)')],
      {
        clients: 1,
        retry,
      },
    ).limits[0]!.clients!;

  const runs = { jitter: run('jitter'), paced: run('paced') };

  it('with pacing: at most one 429 per partition per window once it has read the fields (none here)', () => {
    const paced = runs.paced;
    expect(paced.deniedInformed).toBeLessThanOrEqual(Math.ceil(paced.lastThroughMs! / 1000));
    expect(paced.deniedInformed).toBe(0);
  });

  it('without pacing: hundreds of 429s', () => {
    expect(runs.jitter.denied).toBeGreaterThanOrEqual(200);
  });

  it.each(readmeRows('| `--retry` | attempts | admitted | 429s | 429s once it had read the fields |'))(
    "the README's row of %s",
    (mode, cells) => {
      const c = runs[mode as 'jitter' | 'paced'];
      expect(cells).toEqual([
        String(c.attempts),
        String(c.admitted),
        String(c.denied),
        String(c.deniedInformed),
        String(c.held),
        seconds(c.lastThroughMs!),
      ]);
    },
  );
});

describe('simulateClients: bounds', () => {
  it('no request makes more than retries + 1 attempts; every request is admitted once or given up; the same seed, the same run', () => {
    fc.assert(
      fc.property(
        fc.constantFrom<RetryMode>('none', 'immediate', 'retry-after', 'jitter', 'paced'),
        fc.integer({ min: 0, max: 6 }),
        fc.integer({ min: 1, max: 40 }),
        fc.array(fc.tuple(fc.integer({ min: 1, max: 60 }), fc.integer({ min: 0, max: 3000 })), {
          minLength: 1,
          maxLength: 4,
        }),
        fc.constantFrom(
          'fixedWindow(limit=10,window=1s)',
          'tokenBucket(capacity=5,refillRate=20)',
          'slidingWindowLog(limit=8,window=500ms)',
          'leakyBucket(capacity=5,leakRate=10,mode=shape)',
        ),
        fc.integer({ min: 1, max: 1000 }),
        (retry, retries, clients, bursts, limit, seed) => {
          const pattern = bursts.map(([n, at]) => `burst ${n} at ${at}ms`).join(', ');
          const simulateOnce = () =>
            simulateClients(patternTraffic(parsePattern(pattern)), [parseLimit(limit)], {
              clients,
              retry,
              retries,
              seed,
            });
          const report = simulateOnce();
          const c = report.limits[0]!.clients!;
          expect(c.maxAttempts).toBeLessThanOrEqual((retry === 'none' ? 0 : retries) + 1);
          expect(c.admitted + c.gaveUp).toBe(report.requests);
          expect(c.admitted + c.denied).toBe(c.attempts);
          expect(report.limits[0]!.requests).toBe(c.attempts);
          expect(simulateOnce()).toEqual(report);
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('rl simulate --clients', () => {
  it("--json: per limit the clients' figures beside the attempts' report, the slices of every limit as long", async () => {
    const { code, stdout, stderr } =
      await rl(argv`simulate --pattern 'burst 500 at 0s' --clients 500 --retry jitter --retries 5
      --limit fixedWindow(limit=100,window=1s) --limit tokenBucket(capacity=100,refillRate=100) --slice 100ms --json`);
    expect([code, stderr]).toEqual([0, '']);
    const report = JSON.parse(stdout) as SimulationReport;
    expect(report.requests).toBe(500);
    for (const limit of report.limits) {
      const c = limit.clients!;
      expect(Object.keys(c)).toEqual([
        'retry',
        'clients',
        'retries',
        'requests',
        'attempts',
        'admitted',
        'denied',
        'gaveUp',
        'deniedPerAdmitted',
        'maxAttempts',
        'held',
        'deniedInformed',
        'lastThroughMs',
        'retrySlices',
        'peakRetrySlice',
        'secondWave',
      ]);
      expect([c.retry, c.clients, c.retries, c.requests]).toEqual(['jitter', 500, 5, 500]);
      expect([limit.requests, limit.admitted, limit.denied]).toEqual([c.attempts, c.admitted, c.denied]);
      const slices = report.limits[0]!.slices.admitted.length;
      for (const series of [limit.slices.admitted, limit.slices.delayed, limit.slices.denied, c.retrySlices])
        expect(series).toHaveLength(slices);
      expect(c.retrySlices.reduce((a, b) => a + b, 0)).toBe(c.attempts - c.requests);
    }
  });

  it("the table: the clients' rows under the limits'", async () => {
    const { code, stdout } =
      await rl(argv`simulate --pattern 'burst 10000 at 0s' --clients 10000 --retry retry-after --retries 20
      --limit fixedWindow(limit=1000,window=1s) --slice 100ms`);
    expect(code).toBe(0);
    expect(stdout).toContain('10000 clients, --retry retry-after: at most 21 attempts per request');
    expect(stdout).toMatch(/429s \/ admitted/);
    expect(stdout).toMatch(/\b45000\b.*\b4\.50\b/);
  });

  it('--seed seeds the jitter, with --traffic too', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rl-clients-test-'));
    try {
      const file = join(dir, 'herd.csv');
      writeFileSync(file, '0,user,1\n'.repeat(300));
      const run = async (seed: string) => {
        const args = argv`simulate --traffic ${file} --clients 300 --seed ${seed}
          --limit fixedWindow(limit=50,window=1s) --json`;
        const { code, stdout, stderr } = await rl(args);
        expect([code, stderr]).toEqual([0, '']);
        return (JSON.parse(stdout) as SimulationReport).limits[0]!.clients!;
      };
      const [one, again, other] = [await run('1'), await run('1'), await run('2')];
      expect(again).toEqual(one);
      expect(other.secondWave).not.toEqual(one.secondWave);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each([
    [['--retry', 'jitter'], '--retry', 'no value without --clients'],
    [['--retries', '2'], '--retries', 'no value without --clients'],
    [['--clients', '10', '--retry', 'sometimes'], '--retry', 'none, immediate, retry-after, jitter, paced'],
    [['--clients', '10', '--retries', '101'], '--retries', 'a whole number from 0 to 100'],
    [['--clients', '0'], '--clients', 'a whole number from 1'],
  ])('%j: exit 2 naming %s', async (args, field, expected) => {
    const { code, stderr } = await rl(
      argv`simulate --pattern 'burst 10 at 0s' --limit fixedWindow(limit=5,window=1s) ${args}`,
    );
    expect(code).toBe(2);
    expect(stderr).toContain(`Invalid option ${field}`);
    expect(stderr).toContain(expected);
  });
});
