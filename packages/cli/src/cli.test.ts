import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { argv } from './testing/argv.js';
import { rl } from './testing/run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'rl-cli-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const TWO_BATCHES = argv`--pattern 'burst 100 at 990ms, burst 100 at 1010ms'`;

describe('rl simulate --json', () => {
  it('prints the report for scripts: every figure of the table, and the slices', async () => {
    const { code, stdout, stderr } = await rl(
      argv`simulate ${TWO_BATCHES} --limit tokenBucket(capacity=20,refillRate=100)
        --limit leakyBucket(capacity=20,leakRate=100,mode=shape) --slice 20ms --json`,
    );
    expect([code, stderr]).toEqual([0, '']);
    const report = JSON.parse(stdout);
    const bucket = {
      label: 'tokenBucket(capacity=20,refillRate=100)',
      algorithm: 'tokenBucket',
      options: { capacity: 20, refillRate: 100 },
      requests: 200,
      admitted: 22,
      denied: 178,
      delayed: 0,
      admittedUnits: 22,
      delayMs: { p50: 0, p95: 0, p99: 0, max: 0 },
      maxInWindow: { windowMs: 1000, allKeys: 22, perKey: 22, boundPerKey: 120 },
      waitMs: null,
      bounds: 'sustained rate + a burst: at most 20 + 100/1s × T in any span T; not "100 in any 1s"',
      slices: { admitted: [20, 2], delayed: [0, 0], denied: [80, 98] },
    };
    // The shaper admits as many, held 0 … 190 ms, paced one every 10 ms.
    const shaper = {
      ...bucket,
      label: 'leakyBucket(capacity=20,leakRate=100,mode=shape)',
      algorithm: 'leakyBucket',
      options: { capacity: 20, leakRate: 100, mode: 'shape' },
      delayed: 21,
      delayMs: { p50: 100, p95: 190, p99: 190, max: 190 },
      maxInWindow: { ...bucket.maxInWindow, boundPerKey: 101 },
      waitMs: 200,
      bounds: 'the pace: admitted requests leave one every 10ms per unit they cost; at most 20 queued',
      // The first of each batch's admitted requests leaves at once, the rest are held.
      slices: { admitted: [20, 2], delayed: [19, 2], denied: [80, 98] },
    };
    expect(report).toEqual({
      requests: 200,
      keys: 1,
      startMs: 980,
      endMs: 1010,
      sliceMs: 20,
      windowMs: 1000,
      limits: [bucket, shaper],
    });
  });

  it('with several keys, the slices of each of the busiest 10 (most arrivals first, ties in order of arrival)', async () => {
    const { code, stdout } = await rl(
      argv`simulate ${TWO_BATCHES} --keys 3 --limit tokenBucket(capacity=20,refillRate=100) --slice 20ms --json`,
    );
    expect(code).toBe(0);
    const { slices } = JSON.parse(stdout).limits[0];
    expect(slices).toEqual({
      admitted: [60, 6],
      delayed: [0, 0],
      denied: [40, 94],
      keys: [
        { key: 'key-0', requests: 67, admitted: [20, 2], delayed: [0, 0], denied: [14, 31] },
        { key: 'key-1', requests: 67, admitted: [20, 2], delayed: [0, 0], denied: [13, 32] },
        { key: 'key-2', requests: 66, admitted: [20, 2], delayed: [0, 0], denied: [13, 31] },
      ],
    });
    const many = JSON.parse(
      (await rl(argv`simulate --pattern '100/s for 1s' --keys 25 --limit fixedWindow(limit=1,window=1s) --json`))
        .stdout,
    ).limits[0].slices;
    expect(many.keys.map((k: { key: string; requests: number }) => `${k.key}:${k.requests}`)).toEqual([
      'key-0:4',
      'key-1:4',
      'key-2:4',
      'key-3:4',
      'key-4:4',
      'key-5:4',
      'key-6:4',
      'key-7:4',
      'key-8:4',
      'key-9:4',
    ]);
  });
});

describe('rl simulate: the table', () => {
  // Off a terminal the table fits 100 columns (on one, the terminal's width; see table.test.ts): these
  // limits' rows would be about 140, so the limits are numbered and the columns split in two tables.
  it('one row per limit, within 100 columns, then what each really bounds', async () => {
    const { code, stdout } = await rl(
      argv`simulate ${TWO_BATCHES} --limit fixedWindow(limit=100,window=1s)
        --limit slidingWindowLog(limit=100,window=1s)`,
    );
    expect(code).toBe(0);
    const lines = stdout.split('\n');
    expect(lines[0]).toBe('200 requests over 0.02 s, 1 key');
    expect(lines.slice(2, 5)).toEqual([
      '#1  fixedWindow(limit=100,window=1s)',
      '#2  slidingWindowLog(limit=100,window=1s)',
      '',
    ]);
    expect(lines[5]).toMatch(/^#\s+admitted\s+denied\s+delayed\s+delay p50 \/ p95 \/ p99 \/ max\s+max in any 1s$/);
    expect(lines[7]).toMatch(/^#1\s+200 \(100\.0%\)\s+0 \(0\.0%\)\s+0\s+0 ms \/ 0 ms \/ 0 ms \/ 0 ms\s+200$/);
    expect(lines[8]).toMatch(/^#2\s+100 \(50\.0%\)\s+100 \(50\.0%\)\s+0\s+.*\s+100$/);
    expect(lines[10]).toMatch(/^#\s+bound per key in 1s\s+wait$/);
    expect(lines.slice(12, 14)).toEqual(['#1                  200  none', '#2                  100  none']);
    for (const line of lines.slice(0, 14)) expect(line.length, line).toBeLessThanOrEqual(100);
    expect(stdout).toContain(
      'What each really bounds:\n  fixedWindow(limit=100,window=1s): each aligned window [k·1s, (k+1)·1s) admits at most 100; up to 200 around a boundary\n',
    );
  });
});

describe('rl simulate: errors name the part to fix (exit 2)', () => {
  it.each([
    [
      argv`simulate --pattern '50/s for 60s, 600/x for 300s' --limit fixedWindow(limit=1,window=1s)`,
      'rl: Invalid option --pattern part 2: "600/x for 300s". Expected a rate such as "600/s"',
    ],
    [
      argv`simulate ${TWO_BATCHES} --limit tokenBucket(capacity=0,refillRate=1)`,
      'rl: Invalid option tokenBucket.capacity: 0.',
    ],
    [argv`simulate ${TWO_BATCHES}`, 'rl: Invalid option --limit: undefined. Expected at least one limit'],
    [argv`simulate --limit fixedWindow(limit=1,window=1s)`, 'either --pattern'],
    [
      argv`simulate ${TWO_BATCHES} --limit fixedWindow(limit=1,window=1s) --wait forever`,
      'rl: Invalid option --wait: "forever".',
    ],
    [
      argv`simulate ${TWO_BATCHES} --limit fixedWindow(limit=1,window=1s) --limit fixedWindow(limit=1,window=1s)`,
      'rl: Invalid option --limit: "fixedWindow(limit=1,window=1s)". Expected each limit once',
    ],
    [
      argv`simulate ${TWO_BATCHES} --limit fixedWindow(limit=1,window=1s) --wait 1h`,
      'rl: Invalid option --wait: "1h". Expected at most 1s for fixedWindow(limit=1,window=1s), the longest wait',
    ],
    [
      argv`simulate ${TWO_BATCHES} --limit fixedWindow(limit=1,window=1s) --chart out.pdf`,
      'rl: Invalid option --chart: "out.pdf". Expected a file name ending in .svg or .png.',
    ],
    [argv`simulate ${TWO_BATCHES} --limt x`, "Unknown option '--limt'"],
    [argv`simulate ${TWO_BATCHES} --keys 0 --limit fixedWindow(limit=1,window=1s)`, 'rl: Invalid option --keys: "0".'],
    [
      argv`simulate --pattern '10/s for 1h' --limit fixedWindow(limit=1,window=1s) --slice 1ms`,
      'rl: Invalid option --slice: 1. Expected a slice of at least 36ms',
    ],
    [argv`simulte`, 'rl: Invalid option command: "simulte". Expected simulate (see rl --help).'],
    // Bounded before the run: a backend stepped every 10 ms over a year, a slice count, a retry storm.
    [
      argv`simulate --backend capacity=10,service=10ms --limit none --pattern ${'burst 1 at 0s, burst 1 at 8760h'}`,
      'rl: Invalid option --pattern: "31536000001ms". Expected traffic spanning at most 24 hours with --backend',
    ],
    [
      argv`simulate --backend capacity=10,service=10ms --limit none --pattern '1/s for 1h' --slice 1ms`,
      'rl: Invalid option --slice: 1. Expected a slice of at least 36ms',
    ],
    [
      argv`simulate --pattern 'burst 1000000 at 0s' --clients 1000 --retry immediate --retries 100 --limit fixedWindow(limit=1,window=1h)`,
      'rl: Invalid option --retries: 100. Expected at most 10000000 attempts in all',
    ],
    [
      argv`simulate ${TWO_BATCHES} --limit fixedWindow(limit=1,window=1s) --chart /nonexistent-rl-dir/x.svg`,
      'rl: Invalid option --chart: "/nonexistent-rl-dir/x.svg". Expected a file that can be written (ENOENT)',
    ],
    [
      argv`simulate ${TWO_BATCHES} --limit fixedWindow(limit=1,window=1s) --report /nonexistent-rl-dir/x.html`,
      'rl: Invalid option --report: "/nonexistent-rl-dir/x.html". Expected a file that can be written (ENOENT)',
    ],
    [
      argv`simulate ${TWO_BATCHES} --limit fixedWindow(limit=1,window=1s) --clients 5 --retries=`,
      'rl: Invalid option --retries: "". Expected a whole number from 0 to 100',
    ],
  ])('%j', async (args, message) => {
    const { code, stdout, stderr } = await rl(args);
    expect([code, stdout]).toEqual([2, '']);
    expect(stderr).toContain(message);
    expect(stderr.split('\n').length).toBe(2);
  });

  it('--help prints the usage; no command prints it on stderr, exit 2', async () => {
    for (const args of [argv`--help`, argv`simulate --help`]) {
      const { code, stdout } = await rl(args);
      expect(code).toBe(0);
      expect(stdout).toContain('Usage: rl simulate');
    }
    const none = await rl([]);
    expect([none.code, none.stdout]).toEqual([2, '']);
    expect(none.stderr).toContain('Usage: rl simulate');
  });
});

describe('rl simulate: what it checks before it runs, and what it takes', () => {
  it('a report that cannot be written stops the run before anything is written (a chart beside it neither)', async () => {
    const chart = join(dir, 'early.svg');
    const { code, stderr } = await rl(
      argv`simulate ${TWO_BATCHES} --limit fixedWindow(limit=1,window=1s) --chart ${chart} --report /nonexistent-rl-dir/x.html`,
    );
    expect(code).toBe(2);
    expect(stderr).toContain('--report');
    expect(() => readFileSync(chart)).toThrow();
  });

  it('a plain number is milliseconds, on the command line and in a --config file', async () => {
    const config = join(dir, 'numbers.json');
    writeFileSync(
      config,
      JSON.stringify({ pattern: '10/s for 5s', limits: ['fixedWindow(limit=2,window=1s)'], wait: 500, json: true }),
    );
    const fromFile = JSON.parse((await rl(argv`simulate --config ${config} --window 1000 --slice 500`)).stdout);
    expect([fromFile.windowMs, fromFile.limits[0].waitMs]).toEqual([1000, 500]);
  });

  it("a shaper's busiest span counts requests, as its bound does, whatever they cost", async () => {
    const { code, stdout } = await rl(
      argv`simulate --pattern '100/s for 5s' --limit leakyBucket(capacity=6,leakRate=30,mode=shape) --window 150ms --cost 3 --json`,
    );
    expect(code).toBe(0);
    const { maxInWindow } = JSON.parse(stdout).limits[0];
    // Requests of 3 units leave 100 ms apart: at most 2 in any 150 ms (the bound: 5 requests of 1).
    expect(maxInWindow.perKey).toBe(2);
    expect(maxInWindow.perKey).toBeLessThanOrEqual(maxInWindow.boundPerKey);
  });
});

describe('rl simulate --config', () => {
  it('takes the options by their long names; limits as calls or {factory: options}; the command line wins', async () => {
    const config = join(dir, 'limits.json');
    writeFileSync(
      config,
      JSON.stringify({
        pattern: 'burst 100 at 990ms, burst 100 at 1010ms',
        limits: ['fixedWindow(limit=100,window=1s)', { tokenBucket: { capacity: 20, refillRate: 100 } }],
        window: '10ms',
        json: true,
      }),
    );
    const report = JSON.parse((await rl(argv`simulate --config ${config}`)).stdout);
    expect(report.limits.map((l: { label: string; admitted: number }) => [l.label, l.admitted])).toEqual([
      ['fixedWindow(limit=100,window=1s)', 200],
      ['tokenBucket(capacity=20,refillRate=100)', 22],
    ]);
    expect(report.windowMs).toBe(10);
    const overridden = JSON.parse(
      (await rl(argv`simulate --config ${config} --limit slidingWindowLog(limit=100,window=1s) --window 1s`)).stdout,
    );
    expect(overridden.limits.map((l: { label: string }) => l.label)).toEqual(['slidingWindowLog(limit=100,window=1s)']);
    expect(overridden.windowMs).toBe(1000);
  });

  it('a flag given as anything but true or false in the file is named', async () => {
    const config = join(dir, 'flag.json');
    writeFileSync(
      config,
      JSON.stringify({ pattern: '1/s for 1s', limits: ['fixedWindow(limit=1,window=1s)'], json: 'false' }),
    );
    const { code, stderr } = await rl(argv`simulate --config ${config}`);
    expect([code, stderr]).toEqual([
      2,
      expect.stringContaining('Invalid option --config json: "false". Expected true or false'),
    ]);
  });

  it.each([
    ['{"patern": "1/s for 1s"}', 'patern'],
    ['{"limits": ["fixedWindow(limit=5,window=1s)"], "constructor": "x"}', 'constructor'],
    ['{"limits": ["fixedWindow(limit=5,window=1s)"], "__proto__": {"json": true}}', '__proto__'],
    ['{"limits": ["fixedWindow(limit=5,window=1s)"], "limit": "tokenBucket(capacity=1,refillRate=1)"}', 'limit'],
  ])('a name in the file that is no option of it is named: %s', async (json, name) => {
    const config = join(dir, 'bad.json');
    writeFileSync(config, json);
    const { code, stderr } = await rl(argv`simulate --pattern ${'1/s for 1s'} --config ${config}`);
    expect([code, stderr]).toEqual([2, expect.stringContaining(`Invalid option --config ${name}`)]);
  });
});

describe('rl simulate --traffic', () => {
  it.each([
    ['csv with a header', 'arrivals.csv', 'time,key,cost\n0.99,a,1\n0.99,b\n1.01,a,2\n'],
    [
      'JSON lines',
      'arrivals.jsonl',
      '{"time": 0.99, "key": "a"}\n{"time": 0.99, "key": "b", "cost": 1}\n\n{"time": 1.01, "key": "a", "cost": 2}\n',
    ],
    [
      'ISO dates',
      'dates.csv',
      '1970-01-01T00:00:00.990Z,a\n1970-01-01T00:00:00.990Z,b\n1970-01-01T00:00:01.010Z,a,2\n',
    ],
  ])('%s', async (_, name, text) => {
    writeFileSync(join(dir, name), text);
    const report = JSON.parse(
      (await rl(argv`simulate --traffic ${join(dir, name)} --limit fixedWindow(limit=2,window=1s) --json`)).stdout,
    );
    expect(report).toMatchObject({ requests: 3, keys: 2, limits: [{ admitted: 3, admittedUnits: 4 }] });
  });

  it('an access log (combined format): its times, with their offset; the client address as the key', async () => {
    const log = [
      '203.0.113.9 - - [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1" 200 2326 "-" "curl/8"',
      '203.0.113.9 - - [10/Oct/2000:13:55:36 -0700] "GET /b HTTP/1.1" 200 2326 "-" "curl/8"',
      '198.51.100.7 - - [10/Oct/2000:20:55:37 +0000] "GET /c HTTP/1.1" 200 12 "-" "curl/8"',
      '203.0.113.9 - - [10/Oct/2000:13:55:36 -0700] "GET /d HTTP/1.1" 200 2326 "-" "curl/8"',
    ].join('\n');
    writeFileSync(join(dir, 'access.log'), log);
    const report = JSON.parse(
      (await rl(argv`simulate --traffic ${join(dir, 'access.log')} --limit fixedWindow(limit=2,window=1s) --json`))
        .stdout,
    );
    expect(report).toMatchObject({
      requests: 4,
      keys: 2,
      startMs: Date.UTC(2000, 9, 10, 20, 55, 36),
      endMs: Date.UTC(2000, 9, 10, 20, 55, 37),
      limits: [{ admitted: 3, denied: 1 }],
    });
  });

  it.each([
    ['bad.csv', '0.5,a\nsoon,b\n', '--traffic', 'line 2 time: "soon"'],
    ['bad.jsonl', '{"time": 1}\n{"time": 2, "cost": -1}\n', '--traffic', 'line 2 cost: -1'],
    ['bad2.jsonl', '{"time": 1}\n[1]\n', '--traffic', 'line 2'],
    ['far.csv', '0,a\n1e306,b\n', '--traffic', 'line 2 time: "1e306"'],
    ['far.jsonl', '{"time": 0}\n{"time": 1e308}\n', '--traffic', 'line 2 time: 1e+308'],
  ])('%s: the line to fix', async (name, text, _, message) => {
    writeFileSync(join(dir, name), text);
    const { code, stderr } = await rl(
      argv`simulate --traffic ${join(dir, name)} --limit fixedWindow(limit=2,window=1s)`,
    );
    expect(code).toBe(2);
    expect(stderr).toContain(message);
  });

  it('a directory given as the file is named', async () => {
    const { code, stderr } = await rl(argv`simulate --traffic ${dir} --limit fixedWindow(limit=2,window=1s)`);
    expect([code, stderr]).toEqual([2, expect.stringContaining('Invalid option --traffic')]);
    expect(stderr).toContain('a file that can be read (EISDIR)');
  });

  it('a missing file, and --keys with a file, are named', async () => {
    expect(
      (await rl(argv`simulate --traffic ${join(dir, 'nope.csv')} --limit fixedWindow(limit=2,window=1s)`)).stderr,
    ).toContain('Invalid option --traffic');
    writeFileSync(join(dir, 'one.csv'), '1,a\n');
    expect(
      (await rl(argv`simulate --traffic ${join(dir, 'one.csv')} --keys 3 --limit fixedWindow(limit=2,window=1s)`))
        .stderr,
    ).toContain('Invalid option --keys: "3". Expected no value with --traffic');
  });
});

describe('rl simulate --chart', () => {
  it('writes the chart as SVG and as PNG: a panel per limit, admitted at once, after a delay and denied per slice', async () => {
    const svg = join(dir, 'chart.svg');
    const png = join(dir, 'chart.png');
    const args = argv`simulate --pattern '50/s for 2s, 600/s for 3s' --limit tokenBucket(capacity=400,refillRate=200)
      --limit leakyBucket(capacity=100,leakRate=200,mode=shape)`;
    const { code } = await rl(argv`${args} --chart ${svg} --chart ${png}`);
    expect(code).toBe(0);
    const text = readFileSync(svg, 'utf8');
    expect(text.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(text).toContain('tokenBucket(capacity=400,refillRate=200): 1099 admitted (0 after a delay), 801 denied');
    expect(text).toContain(
      'leakyBucket(capacity=100,leakRate=200,mode=shape): 799 admitted (698 after a delay), 1101 denied',
    );
    for (const legend of ['■ admitted at once', '■ admitted after a delay', '■ denied']) expect(text).toContain(legend);
    expect(text).toContain('requests per 50ms');
    // One bar per slice and outcome that has requests, per limit, in its outcome's colour.
    const report = JSON.parse((await rl(argv`${args} --json`)).stdout);
    const fills: Record<string, number> = { '#4c78a8': 0, '#f2a23a': 0, '#e45756': 0 };
    for (const l of report.limits) {
      l.slices.admitted.forEach((n: number, i: number) => {
        fills['#4c78a8']! += n - l.slices.delayed[i] > 0 ? 1 : 0;
        fills['#f2a23a']! += l.slices.delayed[i] > 0 ? 1 : 0;
        fills['#e45756']! += l.slices.denied[i] > 0 ? 1 : 0;
      });
    }
    expect(fills['#f2a23a']).toBeGreaterThan(50);
    const drawn = Object.fromEntries(
      Object.keys(fills).map((color) => [color, text.split(`fill="${color}"`).length - 1]),
    );
    // Each colour's rects, plus its legend's text mark.
    expect(drawn).toEqual(Object.fromEntries(Object.entries(fills).map(([color, n]) => [color, n + 1])));
    expect([...readFileSync(png).subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  });
});

describe('rl simulate: progress on stderr', () => {
  it('with --progress off a terminal: a line per tenth of each limit, the table unchanged on stdout', async () => {
    const { code, stdout, stderr } = await rl(
      argv`simulate --pattern '1000/s for 140s' --limit fixedWindow(limit=10,window=1s) --progress`,
    );
    expect(code).toBe(0);
    expect(stderr.split('\n').filter(Boolean)).toEqual([
      'simulate 1/1 fixedWindow(limit=10,window=1s): 65536/140000 (46%)',
      'simulate 1/1 fixedWindow(limit=10,window=1s): 131072/140000 (93%)',
      'simulate 1/1 fixedWindow(limit=10,window=1s): 140000/140000 (100%)',
    ]);
    expect(stdout).toContain('140000 requests');
  });

  it('not by default off a terminal; on a terminal, one line rewritten in place', async () => {
    expect((await rl(argv`simulate ${TWO_BATCHES} --limit fixedWindow(limit=10,window=1s)`)).stderr).toBe('');
    expect((await rl(argv`simulate ${TWO_BATCHES} --limit fixedWindow(limit=10,window=1s)`, true)).stderr).toBe(
      '\r\x1b[2Ksimulate 1/1 fixedWindow(limit=10,window=1s): 200/200 (100%)\n',
    );
  });
});
