import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { InvalidOptionError } from '@rl/core';
import { argv } from './testing/argv.js';
import { rl } from './testing/run-cli.js';
import { parseBackend, parseClasses, parseGate } from './backend.js';

// The seed's step: 100 per second for 90 s, a backend of 100 in flight whose service time goes from 10 ms to 2 s at 30 s.
const SEED = argv`simulate --pattern '100/s for 90s' --backend capacity=100,service=10ms,slow=2s@30s
  --limit none --limit concurrency(limit=50) --limit adaptiveConcurrency(min=5,max=1000)`;

describe('rl simulate --backend', () => {
  it('--json: per limit the admitted, refused per class, most in flight, p50/p99 and goodput, whole run and per slice', async () => {
    const { code, stdout, stderr } = await rl(argv`${SEED} --slice 30s --json`);
    expect([code, stderr]).toEqual([0, '']);
    const report = JSON.parse(stdout);
    expect(report.backend).toEqual({
      label: 'capacity=100,service=10ms,slow=2s@30s',
      capacity: 100,
      serviceMs: 10,
      slow: { toMs: 2000, atMs: 30_000 },
    });
    expect(report.requests).toBe(9000);
    expect(report.limits.map((l: { label: string }) => l.label)).toEqual([
      'none',
      'concurrency(limit=50)',
      'adaptiveConcurrency(min=5,max=1000)',
    ]);
    const [none, fixed, adaptive] = report.limits;
    const last = (l: { slices: { goodputRatio: number; p99Ms: number; peakInFlight: number }[] }) => l.slices.at(-1)!;
    expect(Object.keys(adaptive.total).sort()).toEqual(
      [
        'admitted',
        'admittedPerClass',
        'from',
        'goodput',
        'goodputRatio',
        'p50Ms',
        'p99Ms',
        'peakInFlight',
        'permits',
        'refused',
        'to',
      ].sort(),
    );
    expect(adaptive.slices).toHaveLength(3);
    // The last 30 s: no limit drowns, a fixed 50 gets half the capacity, the adaptive limit all of it within 2x the latency.
    expect(last(none).p99Ms).toBeGreaterThan(30_000);
    expect(last(fixed).goodputRatio).toBeCloseTo(0.5, 1);
    expect(last(adaptive).goodputRatio).toBeGreaterThanOrEqual(0.9);
    expect(last(adaptive).p99Ms).toBeLessThanOrEqual(4000);
    expect(fixed.total.peakInFlight).toBe(50);
  });

  it('the table: the three side by side, for the whole run and the last slice', async () => {
    const { code, stdout } = await rl(argv`${SEED} --slice 30s --classes critical=1,sheddable=1`);
    expect(code).toBe(0);
    const lines = stdout.split('\n');
    expect(lines[0]).toBe(
      '9000 requests over 89.991 s; backend: 100 in flight at full speed, service 10ms, 2.0s from 30 s',
    );
    expect(lines).toContain('Whole run:');
    expect(lines).toContain('Last slice (60 s to 89.991 s):');
    // Wider than 100 columns: the rows are numbered, the adaptive limit is #3; in the last slice it sheds sheddable work only.
    expect(lines).toContain('#3  adaptiveConcurrency(min=5,max=1000)');
    expect(stdout).toMatch(/#3 +1499 +1500 \(sheddable 1500\) +125 +2\.5s \/ 2\.5s +50\.0\/s +1\.00/);
  });

  it.each([
    [['--backend', 'capacity=0,service=10ms'], '--backend capacity'],
    [['--backend', 'capacity=10'], '--backend service'],
    [['--backend', 'capacity=10,service=10ms,slow=2s'], '--backend slow'],
    [['--backend', 'capacity=10,service=10ms,slow=2s@30s@9s'], '--backend slow'],
    [['--backend', 'capacity=10,service=10ms,speed=2'], '--backend'],
    [['--backend', 'capacity=10,service=10ms', '--chart', 'x.gif'], '--chart'],
    [['--backend', 'capacity=10,service=10ms', '--wait', '1s'], '--wait'],
    [['--backend', 'capacity=10,service=10ms', '--clients', '10'], '--clients'],
    [['--backend', 'capacity=10,service=10ms', '--limit', 'tokenBucket(capacity=1,refillRate=1)'], '--limit'],
    [
      ['--backend', 'capacity=10,service=10ms', '--limit', 'adaptiveConcurrency(min=10,max=5)'],
      'adaptiveConcurrency.max',
    ],
    [['--classes', 'critical=1', '--limit', 'fixedWindow(limit=1,window=1s)'], '--classes'],
  ])('%j is a usage error naming %s', async (args, field) => {
    const withLimit = args.includes('--limit') ? args : [...args, '--limit', 'none'];
    const { code, stderr } = await rl(argv`simulate --pattern '10/s for 1s' ${withLimit}`);
    expect(code).toBe(2);
    expect(stderr).toContain(field);
  });

  it('--chart and --report: the admitted and refused per slice of each limit, the tables and the chart in one page', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rl-backend-'));
    try {
      const chart = join(dir, 'seed.svg');
      const page = join(dir, 'seed.html');
      const { code, stderr } = await rl(argv`${SEED} --slice 30s --chart ${chart} --report ${page}`);
      expect([code, stderr]).toEqual([0, '']);
      const svg = readFileSync(chart, 'utf8');
      expect(svg).toMatch(/^<svg/);
      expect(svg).toContain('adaptiveConcurrency(min=5,max=1000): last slice p99 2');
      const html = readFileSync(page, 'utf8');
      expect(html).toContain('<h2>Whole run</h2>');
      expect(html).toContain('<h2>Last slice (60 s to 89.991 s)</h2>');
      expect(html).toContain('<figure><svg');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each([
    // Work done at the instant the next request comes has left: that request finds its slot free.
    ['1/s for 5s', 'capacity=1,service=1s', 'concurrency(limit=1)', { admitted: 5, refused: 0, peak: 1, p50: 1000 }],
    // Completions at their own time, not a millisecond late.
    ['100/s for 10s', 'capacity=100,service=10ms', 'none', { admitted: 1000, refused: 0, peak: 1, p50: 10 }],
  ])('%s before %s, %s: %j', async (pattern, backend, limit, expected) => {
    const { stdout } = await rl(argv`simulate --pattern ${pattern} --backend ${backend} --limit ${limit} --json`);
    const [total] = JSON.parse(stdout).limits.map((l: { total: Record<string, unknown> }) => l.total);
    expect({
      admitted: total.admitted,
      refused: Object.values(total.refused as Record<string, number>).reduce((a, b) => a + b, 0),
      peak: total.peakInFlight,
      p50: total.p50Ms,
    }).toEqual(expected);
  });

  it("the share of the backend's capacity does not depend on --slice (a slice under 10 ms, or not a multiple of it)", async () => {
    // 50 a second of 10 ms each on a backend of 1 in flight: half its capacity, whatever the slices.
    for (const slice of ['5s', '15ms', '5ms', '1ms']) {
      const { code, stdout } = await rl(
        argv`simulate --pattern '50/s for 2s' --backend capacity=1,service=10ms --limit none --slice ${slice} --json`,
      );
      expect(code).toBe(0);
      const [none] = JSON.parse(stdout).limits;
      expect(none.total.goodputRatio, `--slice ${slice}`).toBeCloseTo(0.5, 2);
    }
  });

  it('a plain number is milliseconds in every duration it takes (--slice, service, slow)', async () => {
    const { code, stdout } = await rl(
      argv`simulate --pattern '50/s for 2s' --backend capacity=1,service=10,slow=20@1000 --limit none --slice 500 --json`,
    );
    expect(code).toBe(0);
    const report = JSON.parse(stdout);
    expect(report.backend).toMatchObject({ serviceMs: 10, slow: { toMs: 20, atMs: 1000 } });
    expect(report.limits[0].slices).toHaveLength(4);
  });

  it('parses its parts', () => {
    expect(parseBackend('capacity=4, service=1.5s')).toMatchObject({ capacity: 4, serviceMs: 1500, slow: undefined });
    expect(parseGate('concurrency(limit=50)').gate).toEqual({ kind: 'fixed', permits: 50 });
    expect(parseGate('adaptiveConcurrency(min=2)').gate).toEqual({ kind: 'adaptive', options: { min: 2 } });
    expect(parseClasses('critical=3,0.7=2')).toEqual([
      { priority: 'critical', weight: 3 },
      { priority: 0.7, weight: 2 },
    ]);
    expect(() => parseClasses('vip=1')).toThrow(InvalidOptionError);
    expect(() => parseGate('concurrency(limit=0)')).toThrow(InvalidOptionError);
  });
});
