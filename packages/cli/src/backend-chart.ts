import { writeOptionFile } from './output-file.js';
import { formatDuration } from '@rl/core';
import type { BackendReport } from './backend.js';
import { backendTable } from './backend-report.js';
import { panelTitles, plotLibrary, svgToPng, type PlotFigure } from './chart.js';
import { escape, writeReportFile } from './html-report.js';

/** What the backend chart stacks per slice, bottom to top, and their colours. */
const OUTCOMES = [
  { id: 'admitted', label: 'admitted', color: '#4c78a8' },
  { id: 'refused', label: 'refused', color: '#e45756' },
] as const;

interface Bar {
  limit: string;
  t: number;
  outcome: (typeof OUTCOMES)[number]['id'];
  n: number;
}

/**
 * The chart of a `--backend` run as an SVG document: per limit (one panel each, same time axis), the
 * arrivals admitted and refused in each slice, stacked, and above each panel its last slice's p99
 * latency, most in flight and goodput. Observable Plot on a linkedom document, as the other charts.
 */
export async function renderBackendChartSvg(report: BackendReport, options: { width?: number } = {}): Promise<string> {
  const { Plot, document } = await plotLibrary();
  const slice = report.sliceMs / 1000;
  const rows: Bar[] = report.limits.flatMap((l) =>
    l.slices.flatMap((s) => [
      { limit: l.label, t: s.from / 1000, outcome: 'admitted' as const, n: s.admitted },
      {
        limit: l.label,
        t: s.from / 1000,
        outcome: 'refused' as const,
        n: Object.values(s.refused).reduce((a, b) => a + b, 0),
      },
    ]),
  );
  const labels = report.limits.map((l) => {
    const last = l.slices.at(-1);
    const p99 = last?.p99Ms === undefined ? '—' : `${Math.round(last.p99Ms)} ms`;
    return {
      limit: l.label,
      text: `${l.label}: last slice p99 ${p99}, most in flight ${last?.peakInFlight ?? 0}, goodput ${(last?.goodputRatio ?? 0).toFixed(2)} of capacity`,
    };
  });
  const panel = 150;
  const svg = Plot.plot({
    document,
    width: options.width ?? 900,
    height: 50 + panel * report.limits.length + 40,
    marginTop: 50,
    marginLeft: 60,
    marginRight: 20,
    style: { background: 'white' },
    x: { label: `seconds (slices of ${formatDuration(report.sliceMs)})` },
    y: {
      grid: true,
      label: `requests per ${formatDuration(report.sliceMs)}`,
      labelAnchor: 'center',
      labelArrow: 'none',
    },
    fy: { axis: null, domain: report.limits.map((l) => l.label), padding: 0.2 },
    color: { domain: OUTCOMES.map((o) => o.id), range: OUTCOMES.map((o) => o.color) },
    marks: [
      Plot.rectY(rows, { x1: 't', x2: (d: Bar) => d.t + slice, y: 'n', fill: 'outcome', fy: 'limit' }),
      Plot.ruleY([0]),
      panelTitles(Plot, labels),
      // The legend as marks (Plot's own is HTML, which an SVG file cannot hold).
      Plot.text(['■ admitted'], {
        frameAnchor: 'top-right',
        facetAnchor: 'top',
        dx: -80,
        dy: -34,
        fontSize: 12,
        fill: OUTCOMES[0].color,
      }),
      Plot.text(['■ refused'], {
        frameAnchor: 'top-right',
        facetAnchor: 'top',
        dy: -34,
        fontSize: 12,
        fill: OUTCOMES[1].color,
      }),
    ],
  }) as unknown as PlotFigure;
  svg.setAttribute('xmlns', 'http://www.w3.org/2000/svg');
  return svg.outerHTML;
}

/** Writes the backend chart to each path (`.svg` or `.png`, checked by the command first). */
export async function writeBackendCharts(report: BackendReport, paths: readonly string[]): Promise<void> {
  if (paths.length === 0) return;
  const svg = await renderBackendChartSvg(report);
  for (const path of paths) await writeOptionFile('--chart', path, /\.png$/i.test(path) ? await svgToPng(svg) : svg);
}

/**
 * The `--backend` report as one self-contained HTML page: the backend, the table of every limit for
 * the whole run and for the last slice, and the chart inline.
 */
export async function renderBackendHtmlReport(report: BackendReport, command?: string): Promise<string> {
  const svg = await renderBackendChartSvg(report, { width: 960 });
  const last = report.limits[0]?.slices.at(-1);
  const section = (title: string, which: 'total' | 'last'): string => {
    const [header, rows] = backendTable(
      report.limits.map((l) => [l.label, which === 'total' ? l.total : l.slices.at(-1)!]),
    );
    return `<h2>${escape(title)}</h2><table><thead><tr>${header.map((h) => `<th>${escape(h)}</th>`).join('')}</tr></thead><tbody>${rows
      .map((r) => `<tr>${r.map((c) => `<td>${escape(c)}</td>`).join('')}</tr>`)
      .join('')}</tbody></table>`;
  };
  const b = report.backend;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>rl simulate --backend ${escape(b.label)}</title>
<style>body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1040px; padding: 0 16px; }
table { border-collapse: collapse; } th, td { padding: 3px 10px; border-bottom: 1px solid #ddd; text-align: right; }
th:first-child, td:first-child { text-align: left; } code { font-size: 12px; color: #555; }</style></head>
<body><h1>A backend of ${b.capacity} in flight, service ${b.serviceMs} ms${b.slow === undefined ? '' : `, ${b.slow.toMs} ms from ${b.slow.atMs / 1000} s`}</h1>
<p>${report.requests} requests over ${(report.durationMs / 1000).toFixed(3)} s.${command === undefined ? '' : ` <code>${escape(command)}</code>`}</p>
${section('Whole run', 'total')}
${last === undefined ? '' : section(`Last slice (${last.from / 1000} s to ${last.to / 1000} s)`, 'last')}
<figure>${svg}</figure>
</body></html>
`;
}

/** Writes {@link renderBackendHtmlReport} to `path`. */
export async function writeBackendHtmlReport(report: BackendReport, path: string, command?: string): Promise<void> {
  await writeReportFile(path, await renderBackendHtmlReport(report, command));
}
