import { writeFile } from 'node:fs/promises';
import { formatDuration, InvalidOptionError } from '@rl/core';
import type { SimulationReport } from './simulate.js';

const COLORS = { admitted: '#4c78a8', denied: '#e45756' };

/**
 * The chart of a report as an SVG document: per limit (one panel each, same time axis), the requests
 * admitted and denied in each slice of `report.sliceMs`, stacked. Drawn by Observable Plot on a
 * linkedom document (no browser); both are loaded only when a chart is asked for.
 */
export async function renderChartSvg(report: SimulationReport, options: { width?: number; title?: string } = {}): Promise<string> {
  const [Plot, { parseHTML }] = await Promise.all([import('@observablehq/plot'), import('linkedom')]);
  const { document } = parseHTML('<!doctype html><html><body></body></html>');
  const rows: { limit: string; t: number; outcome: 'admitted' | 'denied'; n: number }[] = [];
  const slice = report.sliceMs / 1000;
  for (const l of report.limits) {
    l.slices.admitted.forEach((n, i) => rows.push({ limit: l.label, t: i * slice, outcome: 'admitted', n }));
    l.slices.denied.forEach((n, i) => rows.push({ limit: l.label, t: i * slice, outcome: 'denied', n }));
  }
  const panel = 150;
  const width = options.width ?? 900;
  const labels = report.limits.map((l) => ({ limit: l.label, text: `${l.label}: ${l.admitted} admitted, ${l.denied} denied` }));
  const svg = Plot.plot({
    document,
    width,
    height: 50 + panel * report.limits.length + 40,
    marginTop: 50,
    marginRight: 20,
    style: { background: 'white' },
    x: { label: `seconds; requests admitted and denied per ${formatDuration(report.sliceMs)} of arrivals` },
    y: { grid: true, label: null },
    fy: { axis: null, domain: report.limits.map((l) => l.label), padding: 0.2 },
    color: { domain: ['admitted', 'denied'], range: [COLORS.admitted, COLORS.denied] },
    marks: [
      Plot.rectY(rows, { x1: 't', x2: (d: { t: number }) => d.t + slice, y: 'n', fill: 'outcome', fy: 'limit' }),
      Plot.ruleY([0]),
      // Each panel's name above it, in the gap between panels.
      Plot.text(labels, { fy: 'limit', text: 'text', frameAnchor: 'top-left', dy: -14, fontSize: 12, fontWeight: 'bold' }),
      // The legend (and title) as marks in the top panel only: Plot's own legend is HTML, which an SVG file cannot hold.
      Plot.text([`■ admitted`], { frameAnchor: 'top-right', facetAnchor: 'top', dx: -70, dy: -34, fill: COLORS.admitted, fontSize: 12 }),
      Plot.text([`■ denied`], { frameAnchor: 'top-right', facetAnchor: 'top', dy: -34, fill: COLORS.denied, fontSize: 12 }),
      ...(options.title === undefined ? [] : [Plot.text([options.title], { frameAnchor: 'top-left', facetAnchor: 'top', dy: -34, fontSize: 12 })]),
    ],
  }) as unknown as { outerHTML: string; setAttribute(name: string, value: string): void };
  svg.setAttribute('xmlns', 'http://www.w3.org/2000/svg');
  return svg.outerHTML;
}

/** An SVG document as PNG bytes (resvg, with the system's fonts), `scale` × its size. */
export async function svgToPng(svg: string, scale = 1): Promise<Uint8Array> {
  const { Resvg } = await import('@resvg/resvg-js');
  const image = new Resvg(svg, { background: 'white', font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans' }, fitTo: { mode: 'zoom', value: scale } });
  return image.render().asPng();
}

/**
 * Writes the chart of `report` to each path: `.svg` as SVG, `.png` as PNG. Throws
 * `InvalidOptionError` on `--chart` for another extension, before anything is drawn.
 */
export async function writeCharts(report: SimulationReport, paths: readonly string[], title?: string): Promise<void> {
  for (const path of paths) {
    if (!/\.(svg|png)$/i.test(path)) throw new InvalidOptionError('--chart', path, 'a file name ending in .svg or .png');
  }
  if (paths.length === 0) return;
  const svg = await renderChartSvg(report, { title });
  for (const path of paths) {
    await writeFile(path, /\.png$/i.test(path) ? await svgToPng(svg) : svg);
  }
}
