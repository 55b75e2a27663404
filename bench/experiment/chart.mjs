// The chart of a burst experiment run, with the libraries @rl/cli's chart module uses (Observable Plot
// on a linkedom document, resvg for PNG): (1) the distribution of admitted latency per algorithm, one
// panel per store × wait; (2) the backend's arrivals per 10 ms around the surge, per configuration.
import { writeFile } from 'node:fs/promises';
import * as Plot from '@observablehq/plot';
import { parseHTML } from 'linkedom';
import { Resvg } from '@resvg/resvg-js';

const WIDTH = 960;
const PALETTE = {
  'no limit (node:http)': '#9d9d9d',
  'token-bucket': '#4c78a8',
  'fixed-window': '#e45756',
  'sliding-log': '#f58518',
  'sliding-counter': '#54a24b',
  'leaky-bucket': '#b279a2',
};
const colorOf = (name) => PALETTE[name] ?? '#333';

function plot({ title, legend = [], ...options }) {
  const { document } = parseHTML('<!doctype html><html><body></body></html>');
  const svg = Plot.plot({ document, width: WIDTH, style: { background: 'white' }, ...options });
  svg.setAttribute('xmlns', 'http://www.w3.org/2000/svg');
  return { svg: svg.outerHTML, height: Number(svg.getAttribute('height')), title, legend };
}

/** Cumulative fraction of admitted requests at or below each latency bin's upper edge. */
function cdfRows(run, store, wait) {
  const { edges, counts } = run.result.admittedHistogram;
  const total = counts.reduce((a, b) => a + b, 0);
  let acc = 0;
  return counts.map((c, i) => {
    acc += c;
    return {
      series: run.algorithm ?? 'no limit (node:http)',
      store,
      wait,
      ms: edges[i + 1],
      fraction: total ? acc / total : 0,
    };
  });
}

function latencyPlot(runs) {
  const limited = runs.filter((r) => r.algorithm);
  const stores = [...new Set(limited.map((r) => r.store))];
  const rows = [];
  for (const r of limited) rows.push(...cdfRows(r, r.store, r.waits ? 'wait 500ms' : 'no wait'));
  // The baseline in every panel, for reference.
  for (const r of runs.filter((x) => !x.algorithm))
    for (const s of stores) for (const w of ['no wait', 'wait 500ms']) rows.push(...cdfRows(r, s, w));
  const series = [...new Set(rows.map((r) => r.series))];
  const legend = series.map((name) => ({ name, color: colorOf(name) }));
  return plot({
    legend,
    height: 120 + 230 * stores.length,
    marginTop: 60,
    marginRight: 90,
    title: 'Admitted requests: latency from the scheduled send time (cumulative fraction)',
    x: { type: 'log', label: 'latency (ms, log scale)', grid: true, domain: [1, 1000] },
    y: { label: 'fraction ≤ x', grid: true, domain: [0, 1] },
    fx: { label: null, domain: ['no wait', 'wait 500ms'] },
    fy: { label: null, domain: stores },
    color: { legend: false, domain: series, range: series.map(colorOf) },
    marks: [
      Plot.frame({ stroke: '#ccc' }),
      Plot.line(rows, {
        x: 'ms',
        y: 'fraction',
        stroke: 'series',
        fx: 'wait',
        fy: 'store',
        strokeWidth: 1.8,
        curve: 'step-before',
      }),
    ],
  });
}

function arrivalsPlot(runs) {
  const store = runs.find((r) => r.algorithm)?.store;
  const shown = runs.filter((r) => !r.algorithm || r.store === store);
  const rows = [];
  for (const r of shown) {
    const { fromMs, counts } = r.result.backend.per10msAroundSurge;
    counts.forEach((n, i) => rows.push({ label: r.label, t: (fromMs + i * 10) / 1000, n }));
  }
  const labels = shown.map((r) => r.label);
  const names = shown.map((r) => ({
    label: r.label,
    text: `${r.label}: at most ${r.result.backend.maxArrivalsIn10ms} in any 10 ms, peak concurrency ${r.result.backend.peakConcurrency}`,
  }));
  return plot({
    height: 80 + 75 * shown.length,
    marginTop: 50,
    title: `What the backend saw: arrivals per 10 ms (square-root scale), 1 s before to 5 s after the surge (${store ?? 'no'} store)`,
    x: { label: 'seconds since the run started (the surge to 600/s starts at the first phase end)' },
    y: { label: null, type: 'sqrt', grid: true, ticks: 3 },
    fy: { axis: null, domain: labels, padding: 0.3 },
    marks: [
      Plot.rectY(rows, { x1: 't', x2: (d) => d.t + 0.01, y: 'n', fy: 'label', fill: '#4c78a8' }),
      Plot.ruleY([0]),
      Plot.text(names, {
        fy: 'label',
        text: 'text',
        frameAnchor: 'top-left',
        dy: -12,
        fontSize: 11,
        fontWeight: 'bold',
      }),
    ],
  });
}

/** Writes the chart of a run to each path (`.svg` or `.png`). */
export async function writeChart({ meta, runs }, paths) {
  const parts = [latencyPlot(runs), arrivalsPlot(runs)];
  let y = 0;
  // Plot wraps a titled chart in an HTML <figure>, so the titles are drawn here, above each plot.
  const inner = parts.map((p) => {
    const title = `<text x="8" y="${y + 18}" font-size="14" font-weight="bold" font-family="sans-serif">${p.title}</text>`;
    // Plot's legends are HTML too: the algorithms' colours as SVG text beside the title.
    const legend = p.legend
      .map(
        (l, i) =>
          `<text x="${8 + 160 * i}" y="${y + 40}" font-size="12" font-family="sans-serif" fill="${l.color}" font-weight="bold">■ ${l.name}</text>`,
      )
      .join('');
    const top = p.legend.length ? 48 : 26;
    const s = p.svg.replace(/^<svg /, `<svg y="${y + top}" `);
    y += p.height + top + 10;
    return title + legend + s;
  });
  const caption = `<text x="8" y="${y + 14}" font-size="11" font-family="sans-serif" fill="#555">rl burst experiment, ${meta.mode} run ${meta.started} (${meta.phases.map((p) => `${p.rate}/s × ${p.seconds} s`).join(' then ')}), ${meta.cpus} cores, node ${meta.node}</text>`;
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${y + 24}" viewBox="0 0 ${WIDTH} ${y + 24}"><rect width="100%" height="100%" fill="white"/>${inner.join('')}${caption}</svg>`;
  for (const p of paths) {
    if (p.endsWith('.png')) {
      const png = new Resvg(svg, {
        background: 'white',
        font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans' },
      })
        .render()
        .asPng();
      await writeFile(p, png);
    } else await writeFile(p, svg);
  }
}
