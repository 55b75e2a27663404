import { formatDuration, InvalidOptionError } from '@rl/core';
import { clientsTable } from './clients-report.js';
import { writeOptionFile } from './output-file.js';
import { KEY_COLORS, OUTCOMES, renderLimitChartSvg, yLabel, type LimitChart } from './chart.js';
import { seconds } from './format.js';
import { reportTable } from './report.js';
import type { LimitReport, SimulationReport } from './simulate.js';

/** What the page says about the run besides the report: the traffic's description, the command line. */
export interface HtmlReportOptions {
  /** The traffic (a pattern, or a file's name). */
  title?: string;
  /** The command that made the report, shown as run. */
  command?: string;
}

/** Throws `InvalidOptionError` on `--report` unless `path` names an HTML file. */
export function checkHtmlReportPath(path: string): void {
  if (!/\.html?$/i.test(path)) throw new InvalidOptionError('--report', path, 'a file name ending in .html');
}

/** Writes `html` to `path`, or an `InvalidOptionError` on `--report` saying why it cannot be written. */
export function writeReportFile(path: string, html: string): Promise<void> {
  return writeOptionFile('--report', path, html);
}

/** Writes {@link renderHtmlReport} to `path` (checked by {@link checkHtmlReportPath} first). */
export async function writeHtmlReport(
  report: SimulationReport,
  path: string,
  options: HtmlReportOptions = {},
): Promise<void> {
  checkHtmlReportPath(path);
  await writeReportFile(path, await renderHtmlReport(report, options));
}

/**
 * The report as one self-contained HTML page (no network: the charts are inline SVG, the style and
 * the script inline): the table of every limit; per limit a chart of the requests admitted at once,
 * admitted after a delay and denied per slice (a line per key of `slices.keys`), and what the limit
 * really bounds. Pointing at a slice (or moving with the arrow keys on a focused chart) shows that
 * slice's counts for every limit, and the keys' of the limit pointed at.
 */
export async function renderHtmlReport(report: SimulationReport, options: HtmlReportOptions = {}): Promise<string> {
  const charts: LimitChart[] = [];
  for (let i = 0; i < report.limits.length; i++) charts.push(await renderLimitChartSvg(report, i));
  const data = {
    sliceMs: report.sliceMs,
    // Enough decimals for every slice boundary (a multiple of the slice): 250 ms slices need 2.
    decimals: [0, 1, 2].find((d) => Number.isInteger(Math.round(report.sliceMs * 1e6) / 10 ** (9 - d))) ?? 3,
    slices: report.limits[0]?.slices.admitted.length ?? 0,
    outcomes: OUTCOMES,
    keyColors: KEY_COLORS,
    limits: report.limits.map((l) => ({
      label: l.label,
      admitted: l.slices.admitted,
      delayed: l.slices.delayed,
      denied: l.slices.denied,
      keys: l.slices.keys ?? [],
    })),
  };
  const keys = report.limits[0]?.slices.keys;
  const title = options.title === undefined ? 'rl simulate' : `rl simulate: ${options.title}`;
  const sections = report.limits.map((l, i) => {
    const chart = charts[i]!;
    const keyLegend = (l.slices.keys ?? [])
      .map(
        (k, j) =>
          `<span class="key"><i style="background:${KEY_COLORS[j % KEY_COLORS.length]}"></i>${escape(k.key)}</span>`,
      )
      .join('');
    return `<section class="limit" id="limit-${i}">
<h2>${escape(l.label)}</h2>
<p class="summary">${l.requests} requests: ${l.admitted - l.delayed} admitted at once, ${l.delayed} admitted after a delay, ${l.denied} denied.</p>
<div class="rl-chart" tabindex="0" role="img" aria-label="${escape(`${l.label}: ${yLabel(report)} over time`)}" data-limit="${i}" data-width="${chart.width}" data-x0="${chart.x.range[0]}" data-x1="${chart.x.range[1]}" data-t0="${chart.x.domain[0]}" data-t1="${chart.x.domain[1]}" data-y0="${chart.y.range[0]}" data-y1="${chart.y.range[1]}">${chart.svg}</div>
${keyLegend === '' ? '' : `<p class="keys">Lines: admitted per slice for ${keyLegendTitle(report, l)} ${keyLegend}</p>`}
<p class="bounds">What it really bounds: ${escape(l.bounds)}</p>
</section>`;
  });
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="rl simulate">
<title>${escape(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<header>
<h1>${escape(title)}</h1>
<p id="rl-overview">${report.requests} requests over ${seconds(report.endMs - report.startMs)}, ${report.keys} key${report.keys === 1 ? '' : 's'}; charts in slices of ${formatDuration(report.sliceMs)} by arrival time${keys ? `, with a line for each of the ${keys.length === report.keys ? `${keys.length} keys` : `${keys.length} busiest keys`}` : ''}.</p>
${options.command === undefined ? '' : `<p class="command"><code>${escape(options.command)}</code></p>`}
</header>
<main>
${table(reportTable(report), 'rl-table')}
${clientsSection(report)}
<p class="legend">${OUTCOMES.map((o) => `<span><i style="background:${o.color}"></i>${escape(o.label)}</span>`).join('')} <span class="hint">Point at a slice (or focus a chart and use ← →) to see its counts.</span></p>
${sections.join('\n')}
</main>
<div id="rl-tip" role="status" hidden></div>
<script type="application/json" id="rl-data">${scriptJson(data)}</script>
<script>${SCRIPT}</script>
</body>
</html>
`;
}

function keyLegendTitle(report: SimulationReport, l: LimitReport): string {
  const n = l.slices.keys?.length ?? 0;
  return n === report.keys ? `each key:` : `the ${n} busiest of ${report.keys} keys:`;
}

/** With `--clients`: what the clients were, and their table (`#rl-clients`). */
function clientsSection(report: SimulationReport): string {
  const clients = clientsTable(report);
  if (clients === undefined) return '';
  return `<h2 id="rl-clients-title">Clients: ${escape(clients.title)}</h2>\n${table(clients, 'rl-clients')}`;
}

/**
 * A table of the text report, as HTML that fits the window: no cell is ever cut. Headers wrap
 * between words; a limit's call after its `(` and commas (inside a part only when that part alone is
 * wider than the cell); a figure only between its parts (` / `, and before a `(`), never inside a
 * number. In a narrow window (see STYLE) each limit is a block of its cells, each named by its
 * column (`data-label`).
 */
function table(
  { header, rows }: { header: readonly string[]; rows: readonly (readonly string[])[] },
  id: string,
): string {
  const head = header.map((h, c) => `<th${c > 0 ? ' class="n"' : ''}>${escape(h)}</th>`).join('');
  const body = (row: readonly string[]) =>
    row
      .map(
        (cell, c) =>
          `<td${c > 0 ? ' class="n"' : ''} data-label="${escape(header[c]!)}">${c === 0 ? escape(cell).replace(/[(,]/g, '$&<wbr>') : figure(cell)}</td>`,
      )
      .join('');
  return `<div class="table-wrap"><table id="${id}">
<thead><tr>${head}</tr></thead>
<tbody>
${rows.map((row, i) => `<tr data-limit="${i}">${body(row)}</tr>`).join('\n')}
</tbody>
</table></div>`;
}

/** A cell's figures, each part unbreakable: `2800 (100.0%)` may wrap before its `(`, `0 ms / 0 ms` at its slashes. */
function figure(cell: string): string {
  return cell
    .split(' / ')
    .map((part) =>
      part
        .split(' (')
        .map((piece) => `<span class="nb">${escape(piece)}</span>`)
        .join(' ('),
    )
    .join(' / ');
}

export function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** JSON that cannot end its `<script>` element early (keys from a traffic file are anyone's text). */
function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

const STYLE = `
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1b1b1b; margin: 24px auto; max-width: 1040px; padding: 0 16px; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 15px; margin: 28px 0 2px; font-family: ui-monospace, monospace; overflow-wrap: anywhere; }
p { margin: 4px 0; } .command code { font-size: 12px; color: #555; word-break: break-all; }
.table-wrap { overflow-x: auto; margin: 16px 0; } table { border-collapse: collapse; font-size: 13px; } th, td { padding: 3px 8px; border-bottom: 1px solid #ddd; text-align: left; vertical-align: top; }
th.n, td.n { text-align: right; } td:first-child { font-family: ui-monospace, monospace; overflow-wrap: break-word; } .nb { white-space: nowrap; }
@media (max-width: 860px) {
  .table-wrap table, .table-wrap tbody, .table-wrap tr, .table-wrap td { display: block; } .table-wrap thead { display: none; }
  .table-wrap tr { border-bottom: 1px solid #ddd; padding: 6px 0; } .table-wrap td { border: 0; padding: 1px 0; text-align: right; }
  .table-wrap td::before { content: attr(data-label); float: left; margin-right: 12px; color: #555; font-family: system-ui, sans-serif; }
}
.legend span, .keys .key { margin-right: 14px; white-space: nowrap; } .legend .hint { white-space: normal; } .legend i, .keys i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; vertical-align: baseline; }
.keys i { height: 3px; vertical-align: middle; } .hint, .summary, .bounds, .keys { color: #555; }
.rl-chart { outline: none; cursor: crosshair; } .rl-chart:focus-visible { box-shadow: 0 0 0 2px #4c78a8; }
.rl-chart svg { display: block; max-width: 100%; height: auto; }
#rl-tip { position: fixed; z-index: 1; pointer-events: none; background: #fff; border: 1px solid #bbb; border-radius: 4px; box-shadow: 0 2px 8px rgba(0,0,0,.15); padding: 6px 8px; font-size: 12px; }
#rl-tip table { margin: 4px 0 0; font-size: 12px; } #rl-tip th, #rl-tip td { padding: 1px 6px; }
#rl-tip tr.here td { font-weight: bold; } #rl-tip .sw { display: inline-block; width: 8px; height: 8px; margin-right: 3px; }
`;

/** The page's script: the pointer (or the arrow keys) on a chart picks a slice; the tip shows its counts. */
const SCRIPT = `
(() => {
  'use strict';
  const data = JSON.parse(document.getElementById('rl-data').textContent);
  const tip = document.getElementById('rl-tip');
  const charts = Array.from(document.querySelectorAll('.rl-chart'));
  const NS = 'http://www.w3.org/2000/svg';
  const slice = data.sliceMs / 1000;
  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => '&#' + c.charCodeAt(0) + ';');
  const time = (t) => t.toFixed(data.decimals);
  let current = { limit: -1, index: -1 };
  for (const chart of charts) {
    const svg = chart.querySelector('svg');
    const band = document.createElementNS(NS, 'rect');
    band.setAttribute('class', 'rl-band');
    band.setAttribute('fill', 'rgba(0,0,0,0.12)');
    band.setAttribute('pointer-events', 'none');
    band.setAttribute('y', chart.dataset.y0);
    band.setAttribute('height', String(chart.dataset.y1 - chart.dataset.y0));
    band.setAttribute('visibility', 'hidden');
    svg.appendChild(band);
    chart.band = band;
    chart.addEventListener('pointermove', (event) => {
      const index = sliceAt(chart, event.clientX);
      if (index < 0) return hide();
      show(Number(chart.dataset.limit), index, event.clientX, event.clientY);
    });
    chart.addEventListener('pointerleave', hide);
    chart.addEventListener('blur', hide);
    chart.addEventListener('keydown', (event) => {
      if (event.key !== 'ArrowLeft' && event.key !== 'ArrowRight' && event.key !== 'Home' && event.key !== 'End') return;
      event.preventDefault();
      const limit = Number(chart.dataset.limit);
      const from = current.limit === limit ? current.index : -1;
      const index = event.key === 'Home' ? 0 : event.key === 'End' ? data.slices - 1 : Math.max(0, Math.min(data.slices - 1, from + (event.key === 'ArrowLeft' ? -1 : 1)));
      const rect = chart.getBoundingClientRect();
      const x = rect.left + xOf(chart, (index + 0.5) * slice) * (rect.width / Number(chart.dataset.width));
      show(limit, index, x, rect.top + rect.height / 3);
    });
  }
  function xOf(chart, t) {
    const d = chart.dataset;
    return Number(d.x0) + ((t - d.t0) / (d.t1 - d.t0)) * (d.x1 - d.x0);
  }
  function sliceAt(chart, clientX) {
    const d = chart.dataset;
    const rect = chart.querySelector('svg').getBoundingClientRect();
    const px = (clientX - rect.left) * (Number(d.width) / rect.width);
    if (px < Number(d.x0) || px > Number(d.x1)) return -1;
    const t = Number(d.t0) + ((px - d.x0) / (d.x1 - d.x0)) * (d.t1 - d.t0);
    const index = Math.floor(t / slice + 1e-9);
    return index >= 0 && index < data.slices ? index : -1;
  }
  function row(cls, name, s, index) {
    const now = s.admitted[index] - s.delayed[index];
    return '<tr class="' + cls + '"><td>' + name + '</td><td class="n" data-outcome="now">' + now + '</td><td class="n" data-outcome="delayed">' + s.delayed[index] + '</td><td class="n" data-outcome="denied">' + s.denied[index] + '</td></tr>';
  }
  function show(limit, index, clientX, clientY) {
    current = { limit, index };
    for (const chart of charts) {
      const x0 = xOf(chart, index * slice);
      chart.band.setAttribute('x', String(x0));
      chart.band.setAttribute('width', String(xOf(chart, (index + 1) * slice) - x0));
      chart.band.setAttribute('visibility', 'visible');
    }
    const head = '<tr><th>limit</th>' + data.outcomes.map((o) => '<th class="n"><i class="sw" style="background:' + o.color + '"></i>' + esc(o.label) + '</th>').join('') + '</tr>';
    const rows = data.limits.map((l, i) => row(i === limit ? 'limit here' : 'limit', esc(l.label), l, index));
    const keys = data.limits[limit].keys.map((k, j) => row('key', '<i class="sw" style="background:' + data.keyColors[j % data.keyColors.length] + '"></i>key ' + esc(k.key), k, index));
    tip.innerHTML = '<div class="when">' + time(index * slice) + '–' + time((index + 1) * slice) + ' s (slice ' + (index + 1) + ' of ' + data.slices + ')</div><table>' + head + rows.join('') + keys.join('') + '</table>';
    tip.dataset.limit = String(limit);
    tip.dataset.slice = String(index);
    tip.hidden = false;
    const w = tip.offsetWidth;
    const h = tip.offsetHeight;
    tip.style.left = Math.max(4, Math.min(window.innerWidth - w - 4, clientX + 14)) + 'px';
    tip.style.top = Math.max(4, clientY + 14 + h > window.innerHeight ? clientY - h - 14 : clientY + 14) + 'px';
  }
  function hide() {
    current = { limit: -1, index: -1 };
    tip.hidden = true;
    for (const chart of charts) chart.band.setAttribute('visibility', 'hidden');
  }
})();
`;
