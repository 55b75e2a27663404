import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rl } from './testing/run-cli.js';
import { findChromium, HeadlessPage } from './headless-chromium.js';
import type { SimulationReport } from './simulate.js';

const dir = mkdtempSync(join(tmpdir(), 'rl-html-report-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// A token bucket that denies, and a shaper that holds most of what it admits: every outcome shows.
const RUN = [
  'simulate',
  '--pattern',
  '50/s for 2s, 900/s for 3s',
  '--keys',
  '3',
  '--limit',
  'tokenBucket(capacity=400,refillRate=200)',
  '--limit',
  'leakyBucket(capacity=100,leakRate=200,mode=shape)',
];

// The run of issue 43: one key, a column of 3-digit figures ("max in any 1s": 599, 201, 201).
const ONE_KEY = [
  'simulate',
  '--pattern',
  '600/s for 3s',
  '--limit',
  'tokenBucket(capacity=400,refillRate=200)',
  '--limit',
  'leakyBucket(capacity=100,leakRate=200,mode=shape)',
  '--limit',
  'slidingWindowLog(limit=200,window=1s)',
];

// Clients that retry (--clients): the page has their table under the limits'.
const CLIENTS = [
  'simulate',
  '--pattern',
  'burst 2000 at 0s',
  '--clients',
  '2000',
  '--retries',
  '10',
  '--limit',
  'fixedWindow(limit=400,window=1s)',
  '--limit',
  'tokenBucket(capacity=400,refillRate=400)',
  '--slice',
  '100ms',
];

/** The report as JSON, and the HTML page of the same run (`run` replaces {@link RUN}). */
async function reportAndPage(
  name: string,
  extra: string[] = [],
  run: string[] = RUN,
): Promise<{ report: SimulationReport; path: string; html: string }> {
  const path = join(dir, name);
  const { code, stdout, stderr } = await rl([...run, ...extra, '--json', '--report', path]);
  expect([code, stderr]).toEqual([0, '']);
  return { report: JSON.parse(stdout) as SimulationReport, path, html: readFileSync(path, 'utf8') };
}

describe('rl simulate --report: the page', () => {
  it('is one file that needs no network: no external script, style, image or font', async () => {
    const { html } = await reportAndPage('self-contained.html');
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html).not.toMatch(/<script[^>]+src=|<link\b|<img\b|@import|url\(/i);
    // The only URLs are the SVG namespace (an identifier, never fetched).
    expect(new Set(html.match(/https?:\/\/[^\s"')]+/g))).toEqual(new Set(['http://www.w3.org/2000/svg']));
    expect(html).toContain('<table id="rl-table">');
    expect(html.match(/<section class="limit"/g)).toHaveLength(2);
    expect(html).toContain('requests per 50ms');
  });

  it("with --clients: the clients' table under the limits', a row per limit with the JSON's figures", async () => {
    const { html, report } = await reportAndPage('clients.html', [], CLIENTS);
    expect(html).toContain('<h2 id="rl-clients-title">Clients: 2000 clients, --retry jitter: at most 11 attempts');
    const table = /<table id="rl-clients">(.*?)<\/table>/s.exec(html)![1]!;
    const text = (cell: string) => cell.replace(/<[^>]+>/g, '').replace(/&#39;/g, "'");
    const rows = [...table.matchAll(/<tr data-limit="\d+">(.*?)<\/tr>/gs)].map((row) =>
      [...row[1]!.matchAll(/<td[^>]*data-label="([^"]*)"[^>]*>(.*?)<\/td>/gs)].map((m) => [text(m[1]!), text(m[2]!)]),
    );
    expect(rows).toEqual(expectedClientCells(report));
  });

  it('shows the command that made it, and escapes what the traffic says (keys, file names)', async () => {
    const file = join(dir, 'hostile.csv');
    writeFileSync(file, '0,</script><b>x</b>\n0.1,"a&b"\n');
    const path = join(dir, 'hostile.html');
    const { code } = await rl([
      'simulate',
      '--traffic',
      file,
      '--limit',
      'fixedWindow(limit=1,window=1s)',
      '--report',
      path,
    ]);
    expect(code).toBe(0);
    const html = readFileSync(path, 'utf8');
    expect(html).not.toContain('</script><b>');
    expect(html.match(/<\/script>/g)).toHaveLength(2); // the data's and the script's own
    expect(html).toContain(
      `<code>rl simulate --traffic ${file} --limit &#39;fixedWindow(limit=1,window=1s)&#39; --report ${path}</code>`,
    );
    const data = JSON.parse(/<script type="application\/json" id="rl-data">(.*?)<\/script>/s.exec(html)![1]!);
    expect(data.limits[0].keys.map((k: { key: string }) => k.key)).toEqual(['</script><b>x</b>', 'a&b']);
  });

  it('names slices with as many decimals as their boundaries need', async () => {
    const decimals = async (slice: string) => {
      const path = join(dir, `slice-${slice}.html`);
      expect((await rl([...RUN, '--slice', slice, '--report', path])).code).toBe(0);
      return JSON.parse(/id="rl-data">(.*?)<\/script>/s.exec(readFileSync(path, 'utf8'))![1]!).decimals;
    };
    expect([await decimals('1s'), await decimals('250ms'), await decimals('100ms'), await decimals('5ms')]).toEqual([
      0, 2, 1, 3,
    ]);
  });

  it('a name not ending in .html is a usage error naming --report, before anything runs', async () => {
    const { code, stdout, stderr } = await rl([...RUN, '--report', join(dir, 'report.png')]);
    expect([code, stdout]).toEqual([2, '']);
    expect(stderr).toMatch(
      new RegExp(
        `^rl: Invalid option --report: "${join(dir, 'report.png')}". Expected a file name ending in \\.html\\. See \\S+\\n$`,
      ),
    );
  });

  it('a folder that does not exist is a usage error naming --report and the path', async () => {
    const path = join(dir, 'nope', 'report.html');
    const { code, stderr } = await rl([...RUN, '--report', path]);
    expect(code).toBe(2);
    expect(stderr.split('\n')[0]).toContain(
      `rl: Invalid option --report: "${path}". Expected a file that can be written (ENOENT)`,
    );
  });
});

describe('findChromium: the browser of the test', () => {
  it('RL_CHROMIUM, else the first of chromium, chromium-browser, google-chrome on the PATH; none: undefined (the test is skipped)', () => {
    const bin = join(dir, 'bin');
    const empty = join(dir, 'empty');
    mkdirSync(bin);
    mkdirSync(empty);
    writeFileSync(join(bin, 'google-chrome'), '#!/bin/sh\n', { mode: 0o755 });
    writeFileSync(join(bin, 'chromium-browser'), 'not executable', { mode: 0o644 });
    expect(findChromium({ PATH: [empty, bin].join(delimiter) })).toBe(join(bin, 'google-chrome'));
    expect(findChromium({ PATH: empty })).toBeUndefined();
    expect(findChromium({ PATH: bin, RL_CHROMIUM: '/opt/chromium/chrome' })).toBe('/opt/chromium/chrome');
  });
});

const chromium = findChromium();
const NO_BROWSER =
  'skipped: no Chromium on the PATH (Debian: apt-get install -y chromium; or set RL_CHROMIUM); .ci/run installs it';

describe.skipIf(chromium === undefined)(
  `rl simulate --report in headless Chromium${chromium === undefined ? ` (${NO_BROWSER})` : ''}`,
  () => {
    let page: HeadlessPage;
    let report: SimulationReport;
    let path: string;
    const WIDTH = 1100;

    beforeAll(async () => {
      ({ report, path } = await reportAndPage('browser.html'));
      page = await HeadlessPage.open(chromium!, WIDTH, 900);
      await page.navigate(pathToFileURL(path).href);
    }, 30_000);
    afterAll(() => page?.close());

    it('loads with no request but the file itself', () => {
      const requested = page.events
        .filter((e) => e.method === 'Network.requestWillBeSent')
        .map((e) => (e.params.request as { url: string }).url);
      expect(requested).toEqual([pathToFileURL(path).href]);
    });

    // Each cell of the table, whole and within the page, against the JSON report of the same run: on a
    // desktop window, a narrower one and a phone. Before the fix the table ran past its box at 1100 px,
    // which cut the right column's numbers (599 read 59).
    // Each cell of the table, whole and within the page, against the JSON report of the same run: in a
    // desktop window, a narrower one and a phone's. Before the fix the table ran past its box at 1100 px,
    // and the box cut the right column's numbers (599 read 59).
    it.each([
      { run: 'RUN: 2 limits, 3 keys', args: RUN },
      { run: '3 limits, one key: the run of issue 43', args: ONE_KEY },
    ])('shows every cell of the table whole, with the figures of the JSON report ($run)', async ({ args }) => {
      const shown = await reportAndPage('cells.html', [], args);
      await page.navigate(pathToFileURL(shown.path).href);
      try {
        for (const width of [WIDTH, 880, 390]) {
          await page.resize(width, 900);
          expect({ width, ...(await readTable(page)) }).toEqual({
            width,
            pageWidth: width,
            cut: [],
            cells: expectedCells(shown.report),
          });
          const summaries = await page.evaluate<string[]>(
            `[...document.querySelectorAll('.summary')].map((p) => p.innerText)`,
          );
          expect(summaries).toEqual(
            shown.report.limits.map(
              (l) =>
                `${l.requests} requests: ${l.admitted - l.delayed} admitted at once, ${l.delayed} admitted after a delay, ${l.denied} denied.`,
            ),
          );
        }
      } finally {
        await page.resize(WIDTH, 900);
        await page.navigate(pathToFileURL(path).href);
      }
    });

    /** The centre, in the viewport, of the `n`-th bar (left to right) of `color` in the chart of limit `limit` (scrolled into view). */
    async function bar(limit: number, color: string, n: number): Promise<{ x: number; y: number }> {
      return page.evaluate(`(() => {
      const chart = document.querySelectorAll('.rl-chart')[${limit}];
      chart.scrollIntoView({ block: 'center' });
      const rects = [...chart.querySelectorAll('rect[fill="${color}"], g[fill="${color}"] rect')]
        .map((r) => r.getBoundingClientRect()).filter((r) => r.width > 0).sort((a, b) => a.left - b.left);
      const r = rects[${n}];
      return { x: r.left + r.width / 2, y: r.top + r.height / 2 };
    })()`);
    }

    async function tip(): Promise<{ hidden: boolean; limit: string; slice: string; rows: string[][]; when: string }> {
      return page.evaluate(`(() => {
      const tip = document.getElementById('rl-tip');
      return { hidden: tip.hidden, limit: tip.dataset.limit, slice: tip.dataset.slice, when: tip.querySelector('.when')?.textContent,
        rows: [...tip.querySelectorAll('tr')].slice(1).map((tr) => [...tr.cells].map((td) => td.textContent)) };
    })()`);
    }

    it("pointing at a slice shows its admitted at once, delayed and denied for every limit, and the keys' of the limit pointed at", async () => {
      const shaper = report.limits[1]!;
      // A slice where the shaper holds some and denies some, found by its bar of delayed requests.
      const delayedSlices = shaper.slices.delayed.flatMap((n, i) => (n > 0 ? [i] : []));
      const n = delayedSlices.findIndex((i) => shaper.slices.denied[i]! > 0) + 3;
      const slice = delayedSlices[n]!;
      expect([shaper.slices.delayed[slice], shaper.slices.denied[slice]]).toEqual([
        expect.any(Number),
        expect.any(Number),
      ]);
      expect(Math.min(shaper.slices.delayed[slice]!, shaper.slices.denied[slice]!)).toBeGreaterThan(0);
      const { x, y } = await bar(1, '#f2a23a', n);
      await page.pointAt(x, y);
      const shown = await tip();
      expect([shown.hidden, shown.limit, shown.slice]).toEqual([false, '1', String(slice)]);
      expect(shown.when).toBe(
        `${(slice * 0.05).toFixed(2)}–${((slice + 1) * 0.05).toFixed(2)} s (slice ${slice + 1} of ${shaper.slices.admitted.length})`,
      );
      const counts = (s: { admitted: readonly number[]; delayed: readonly number[]; denied: readonly number[] }) => [
        String(s.admitted[slice]! - s.delayed[slice]!),
        String(s.delayed[slice]),
        String(s.denied[slice]),
      ];
      expect(shown.rows).toEqual([
        ...report.limits.map((l) => [l.label, ...counts(l.slices)]),
        ...shaper.slices.keys!.map((k) => [`key ${k.key}`, ...counts(k)]),
      ]);
      // The same slice is marked in every chart.
      const bands = await page.evaluate<string[]>(
        `[...document.querySelectorAll('.rl-band')].map((b) => b.getAttribute('visibility'))`,
      );
      expect(bands).toEqual(['visible', 'visible']);

      // Outside the plot's frame (the page's margin): nothing shown.
      await page.pointAt(2, y);
      expect((await tip()).hidden).toBe(true);
    });

    it('a focused chart moves slice by slice with the arrow keys', async () => {
      await page.evaluate(`document.querySelectorAll('.rl-chart')[0].focus()`);
      await page.press('Home');
      await page.press('ArrowRight');
      const shown = await tip();
      expect([shown.hidden, shown.limit, shown.slice]).toEqual([false, '0', '1']);
    });

    it("shows every cell of the clients' table whole, with the figures of the JSON report", async () => {
      const shown = await reportAndPage('clients-cells.html', [], CLIENTS);
      await page.navigate(pathToFileURL(shown.path).href);
      try {
        for (const width of [WIDTH, 880, 390]) {
          await page.resize(width, 900);
          expect({ width, ...(await readTable(page, 'rl-clients')) }).toEqual({
            width,
            pageWidth: width,
            cut: [],
            cells: expectedClientCells(shown.report),
          });
        }
      } finally {
        await page.resize(WIDTH, 900);
        await page.navigate(pathToFileURL(path).href);
      }
    });

    it('takes a screenshot of the whole page', async () => {
      const png = await page.screenshot();
      // RL_SCREENSHOT_DIR keeps it (CI can upload it); otherwise it goes with the test's folder.
      writeFileSync(join(process.env.RL_SCREENSHOT_DIR ?? dir, 'simulate-report.png'), png);
      expect([...png.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
      // IHDR: the page's width, and a height holding the table and both charts.
      expect(png.readUInt32BE(16)).toBe(WIDTH);
      expect(png.readUInt32BE(20)).toBeGreaterThan(900);
    });
  },
);

/**
 * Each row of the report's table as the JSON report says it: `[column, text]` per cell. Written out
 * here rather than taken from `reportTable`, so that the page is held to the figures, not to itself.
 */
function expectedCells(report: SimulationReport): string[][][] {
  expect(report.windowMs).toBe(1000);
  const share = (n: number, of: number) => `${n} (${((100 * n) / of).toFixed(1)}%)`;
  const ms = (value: number) => `${Number(value.toFixed(1))} ms`;
  return report.limits.map((l) => [
    ['limit', l.label],
    ['admitted', share(l.admitted, l.requests)],
    ['denied', share(l.denied, l.requests)],
    ['delayed', String(l.delayed)],
    ['delay p50 / p95 / p99 / max', [l.delayMs.p50, l.delayMs.p95, l.delayMs.p99, l.delayMs.max].map(ms).join(' / ')],
    [
      'max in any 1s',
      report.keys === 1
        ? String(l.maxInWindow.allKeys)
        : `${l.maxInWindow.allKeys} (busiest key ${l.maxInWindow.perKey})`,
    ],
    ['bound per key in 1s', l.maxInWindow.boundPerKey === undefined ? '—' : String(l.maxInWindow.boundPerKey)],
    ['wait', l.waitMs === null ? 'none' : `up to ${ms(l.waitMs)}`],
  ]);
}

/** Each row of the clients' table as the JSON report says it (written out, as {@link expectedCells}). */
function expectedClientCells(report: SimulationReport): string[][][] {
  expect(report.sliceMs).toBe(100);
  return report.limits.map((l) => {
    const c = l.clients!;
    const wave = c.secondWave;
    return [
      ['limit', l.label],
      ['attempts', String(c.attempts)],
      ['admitted', `${c.admitted} (${((100 * c.admitted) / c.requests).toFixed(1)}%)`],
      ['429s', String(c.denied)],
      ['429s / admitted', c.deniedPerAdmitted === null ? '—' : c.deniedPerAdmitted.toFixed(2)],
      ['gave up', String(c.gaveUp)],
      ['most attempts', String(c.maxAttempts)],
      ['held by pacing', String(c.held)],
      ['peak retries / 100 ms', String(c.peakRetrySlice)],
      [
        '2nd wave: slices, peak / mean per 100 ms',
        wave === null ? '—' : `${wave.slices}, ${wave.peak} / ${Math.round(wave.mean)}`,
      ],
      ['last admitted', c.lastThroughMs === null ? '—' : `${Number((c.lastThroughMs / 1000).toFixed(3))} s`],
    ];
  });
}

/**
 * The table as the page shows it: each body cell as `[its column's name as shown, its text]` (the
 * name from the header when the header is shown, else from the cell's own label), the cells not shown
 * whole (a line of its text outside the table's box or the window, or wider than the cell), and the
 * page's width (wider than the window: the page scrolls sideways).
 */
function readTable(
  page: HeadlessPage,
  id = 'rl-table',
): Promise<{ pageWidth: number; cut: string[]; cells: string[][][] }> {
  return page.evaluate(`(() => {
    const box = document.getElementById('${id}').parentElement.getBoundingClientRect();
    const left = Math.max(box.left, 0) - 0.5;
    const right = Math.min(box.right, document.documentElement.clientWidth) + 0.5;
    const text = (cell) => cell.innerText.replace(/\\s+/g, ' ').trim();
    const shown = (cell) => cell.getClientRects().length > 0;
    const whole = (cell) => {
      const range = document.createRange();
      range.selectNodeContents(cell);
      return [...range.getClientRects()].every((r) => r.left >= left && r.right <= right) && cell.scrollWidth <= cell.clientWidth;
    };
    const heads = [...document.querySelectorAll('#${id} thead th')];
    const cells = [...document.querySelectorAll('#${id} tbody tr')].map((tr) => [...tr.cells]);
    const cut = [...heads.filter(shown), ...cells.flat()].filter((cell) => !whole(cell)).map(text);
    const name = (td, c) => (shown(heads[c]) ? text(heads[c]) : getComputedStyle(td, '::before').content.replace(/^"|"$/g, ''));
    return { pageWidth: document.documentElement.scrollWidth, cut, cells: cells.map((row) => row.map((td, c) => [name(td, c), text(td)])) };
  })()`);
}
