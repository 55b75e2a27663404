import { writeOptionFile } from './output-file.js';
import { formatDuration, InvalidOptionError } from '@rl/core';
import type { LimitReport, SimulationReport } from './simulate.js';

/** The outcomes a chart stacks, bottom to top, and their colours. */
export const OUTCOMES = [
  { id: 'now', label: 'admitted at once', color: '#4c78a8' },
  { id: 'delayed', label: 'admitted after a delay', color: '#f2a23a' },
  { id: 'denied', label: 'denied', color: '#e45756' },
] as const;

export type Outcome = (typeof OUTCOMES)[number]['id'];

/** Colours of the per-key lines (Observable's ten categorical colours, darker first). */
export const KEY_COLORS = [
  '#1b1b1b',
  '#7f3c8d',
  '#11a579',
  '#3969ac',
  '#e68310',
  '#008695',
  '#cf1c90',
  '#80ba5a',
  '#a5aa99',
  '#f97b72',
];

interface Bar {
  limit: string;
  t: number;
  outcome: Outcome;
  n: number;
}

/** A limit's bars: per slice, admitted at once, admitted after a delay and denied (empty ones left out). */
function bars(l: LimitReport, sliceSeconds: number): Bar[] {
  const rows: Bar[] = [];
  const { admitted, delayed, denied } = l.slices;
  for (let i = 0; i < admitted.length; i++) {
    const counts: Record<Outcome, number> = {
      now: admitted[i]! - delayed[i]!,
      delayed: delayed[i]!,
      denied: denied[i]!,
    };
    for (const { id } of OUTCOMES)
      if (counts[id] > 0) rows.push({ limit: l.label, t: i * sliceSeconds, outcome: id, n: counts[id] });
  }
  return rows;
}

/** The y axis's label: what a bar counts. */
export function yLabel(report: SimulationReport): string {
  return `requests per ${formatDuration(report.sliceMs)}`;
}

/** The x axis's label. */
export function xLabel(report: SimulationReport): string {
  return `seconds (slices of ${formatDuration(report.sliceMs)} by arrival time)`;
}

type Plot = typeof import('@observablehq/plot');
export type PlotFigure = {
  outerHTML: string;
  setAttribute(name: string, value: string): void;
  scale(name: 'x' | 'y'): { domain: number[]; range: number[] };
};

type PlotDocument = NonNullable<import('@observablehq/plot').PlotOptions['document']>;

export async function plotLibrary(): Promise<{ Plot: Plot; document: PlotDocument }> {
  const [Plot, { parseHTML }] = await Promise.all([import('@observablehq/plot'), import('linkedom')]);
  // linkedom's document is what Plot needs of one (it renders SVG with it, no browser).
  return { Plot, document: parseHTML('<!doctype html><html><body></body></html>').document as unknown as PlotDocument };
}

/** Each panel's title (`{ limit, text }`) above it, in the gap between panels. */
export function panelTitles(Plot: Plot, labels: readonly { limit: string; text: string }[]) {
  return Plot.text(labels, {
    fy: 'limit',
    text: 'text',
    frameAnchor: 'top-left',
    dy: -14,
    fontSize: 12,
    fontWeight: 'bold',
  });
}

function colorScale() {
  return { domain: OUTCOMES.map((o) => o.id), range: OUTCOMES.map((o) => o.color) };
}

/**
 * The chart of a report as an SVG document: per limit (one panel each, same time axis), the requests
 * admitted at once, admitted after a delay, and denied in each slice of `report.sliceMs`, stacked.
 * Drawn by Observable Plot on a linkedom document (no browser); both are loaded only when a chart is
 * asked for.
 */
export async function renderChartSvg(
  report: SimulationReport,
  options: { width?: number; title?: string } = {},
): Promise<string> {
  const { Plot, document } = await plotLibrary();
  const slice = report.sliceMs / 1000;
  const rows = report.limits.flatMap((l) => bars(l, slice));
  const panel = 150;
  const width = options.width ?? 900;
  const labels = report.limits.map((l) => ({
    limit: l.label,
    text: `${l.label}: ${l.admitted} admitted (${l.delayed} after a delay), ${l.denied} denied`,
  }));
  // The legend (and title) as marks in the top panel only: Plot's own legend is HTML, which an SVG file cannot hold.
  let right = 0;
  const legend = [...OUTCOMES].reverse().map((o) => {
    const mark = Plot.text([`■ ${o.label}`], {
      frameAnchor: 'top-right',
      facetAnchor: 'top',
      dx: -right,
      dy: -34,
      fill: o.color,
      fontSize: 12,
    });
    right += 7 * (o.label.length + 2) + 12;
    return mark;
  });
  const svg = Plot.plot({
    document,
    width,
    height: 50 + panel * report.limits.length + 40,
    marginTop: 50,
    marginLeft: 60,
    marginRight: 20,
    style: { background: 'white' },
    x: { label: xLabel(report) },
    y: { grid: true, label: yLabel(report), labelAnchor: 'center', labelArrow: 'none' },
    fy: { axis: null, domain: report.limits.map((l) => l.label), padding: 0.2 },
    color: colorScale(),
    marks: [
      Plot.rectY(rows, {
        x1: 't',
        x2: (d: Bar) => d.t + slice,
        y: 'n',
        fill: 'outcome',
        fy: 'limit',
        order: OUTCOMES.map((o) => o.id),
      }),
      Plot.ruleY([0]),
      panelTitles(Plot, labels),
      ...legend,
      ...(options.title === undefined
        ? []
        : [Plot.text([options.title], { frameAnchor: 'top-left', facetAnchor: 'top', dy: -34, fontSize: 12 })]),
    ],
  }) as unknown as PlotFigure;
  svg.setAttribute('xmlns', 'http://www.w3.org/2000/svg');
  return svg.outerHTML;
}

/** One limit's chart for the HTML report, and where its x axis lies (for the page's pointer). */
export interface LimitChart {
  readonly svg: string;
  /** Seconds from the report's start at the x axis's ends, and their pixels in the SVG. */
  readonly x: { readonly domain: readonly [number, number]; readonly range: readonly [number, number] };
  /** The pixels of the plot's frame, top and bottom. */
  readonly y: { readonly range: readonly [number, number] };
  readonly width: number;
  readonly height: number;
}

/**
 * The chart of one limit for the HTML report: the stacked bars of {@link renderChartSvg}, and a line
 * per key of `slices.keys` (its admitted requests per slice). No legend or title: the page has them.
 */
export async function renderLimitChartSvg(
  report: SimulationReport,
  index: number,
  options: { width?: number; height?: number } = {},
): Promise<LimitChart> {
  const { Plot, document } = await plotLibrary();
  const l = report.limits[index]!;
  const slice = report.sliceMs / 1000;
  const width = options.width ?? 960;
  const height = options.height ?? 260;
  const count = l.slices.admitted.length;
  const keyMarks = (l.slices.keys ?? []).map((k, i) =>
    Plot.lineY(k.admitted, {
      x: (_: number, j: number) => (j + 0.5) * slice,
      y: (n: number) => n,
      stroke: KEY_COLORS[i % KEY_COLORS.length],
      strokeWidth: 1.5,
      curve: 'step',
    }),
  );
  const svg = Plot.plot({
    document,
    width,
    height,
    marginLeft: 60,
    marginRight: 20,
    style: { background: 'white' },
    x: { label: xLabel(report), domain: [0, count * slice] },
    y: { grid: true, label: yLabel(report), labelAnchor: 'center', labelArrow: 'none' },
    color: colorScale(),
    marks: [
      Plot.rectY(bars(l, slice), {
        x1: 't',
        x2: (d: Bar) => d.t + slice,
        y: 'n',
        fill: 'outcome',
        order: OUTCOMES.map((o) => o.id),
      }),
      Plot.ruleY([0]),
      ...keyMarks,
    ],
  }) as unknown as PlotFigure;
  svg.setAttribute('xmlns', 'http://www.w3.org/2000/svg');
  const x = svg.scale('x');
  const y = svg.scale('y').range;
  return {
    svg: svg.outerHTML,
    x: { domain: [x.domain[0]!, x.domain[1]!], range: [x.range[0]!, x.range[1]!] },
    y: { range: [Math.min(...y), Math.max(...y)] },
    width,
    height,
  };
}

/** An SVG document as PNG bytes (resvg, with the system's fonts), `scale` × its size. */
export async function svgToPng(svg: string, scale = 1): Promise<Uint8Array> {
  const { Resvg } = await import('@resvg/resvg-js');
  const image = new Resvg(svg, {
    background: 'white',
    font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans' },
    fitTo: { mode: 'zoom', value: scale },
  });
  return image.render().asPng();
}

/**
 * Writes the chart of `report` to each path: `.svg` as SVG, `.png` as PNG. Throws
 * `InvalidOptionError` on `--chart` for another extension, before anything is drawn.
 */
export async function writeCharts(report: SimulationReport, paths: readonly string[], title?: string): Promise<void> {
  for (const path of paths) {
    if (!/\.(svg|png)$/i.test(path))
      throw new InvalidOptionError('--chart', path, 'a file name ending in .svg or .png');
  }
  if (paths.length === 0) return;
  const svg = await renderChartSvg(report, { title });
  for (const path of paths) {
    await writeOptionFile('--chart', path, /\.png$/i.test(path) ? await svgToPng(svg) : svg);
  }
}
