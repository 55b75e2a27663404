import { formatDuration } from '@rl/core';
import { clientsTable } from './clients-report.js';
import { count, ms, seconds } from './format.js';
import type { LimitReport, SimulationReport } from './simulate.js';
import { outputWidth, table } from './table.js';

/**
 * The report as text: one row per limit (requests admitted, denied, delayed; delay percentiles; the
 * largest admitted count in any window, against the algorithm's bound per key; the wait applied),
 * then what each limit really bounds. The table fits `width` columns (default: the terminal's, or
 * 100 when stdout is no terminal; see `table`).
 */
export function formatReport(report: SimulationReport, width: number = outputWidth()): string {
  const { header, rows } = reportTable(report);
  const lines = [
    `${report.requests} requests over ${seconds(report.endMs - report.startMs)}, ${report.keys} key${report.keys === 1 ? '' : 's'}`,
    '',
    ...table(header, rows, width),
    ...clientsLines(report, width),
    '',
    'What each really bounds:',
    ...report.limits.map((l) => `  ${l.label}: ${l.bounds}`),
  ];
  return lines.join('\n') + '\n';
}

/** With `--clients`: a blank line, what the clients were, and their table. */
function clientsLines(report: SimulationReport, width: number): string[] {
  const clients = clientsTable(report);
  return clients === undefined ? [] : ['', `${clients.title}:`, ...table(clients.header, clients.rows, width)];
}

/** The report's table, cell by cell: a header and one row per limit (what the text and the HTML reports show). */
export function reportTable(report: SimulationReport): { header: string[]; rows: string[][] } {
  const w = formatDuration(report.windowMs);
  const header = [
    'limit',
    'admitted',
    'denied',
    'delayed',
    'delay p50 / p95 / p99 / max',
    `max in any ${w}`,
    `bound per key in ${w}`,
    'wait',
  ];
  const rows = report.limits.map((l) => [
    l.label,
    count(l.admitted, l.requests),
    count(l.denied, l.requests),
    String(l.delayed),
    `${ms(l.delayMs.p50)} / ${ms(l.delayMs.p95)} / ${ms(l.delayMs.p99)} / ${ms(l.delayMs.max)}`,
    report.keys === 1
      ? String(l.maxInWindow.allKeys)
      : `${l.maxInWindow.allKeys} (busiest key ${l.maxInWindow.perKey})`,
    l.maxInWindow.boundPerKey === undefined ? '—' : String(l.maxInWindow.boundPerKey),
    waitText(l),
  ]);
  return { header, rows };
}

function waitText(l: LimitReport): string {
  if (l.waitMs !== null) return `up to ${ms(l.waitMs)}`;
  return 'none';
}
