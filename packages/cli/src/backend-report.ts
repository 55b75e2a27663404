import type { OverloadStats } from '@rl/core/simulation';
import type { BackendReport } from './backend.js';
import { seconds } from './format.js';
import { outputWidth, table } from './table.js';

/**
 * The report of `--backend` mode as text: the backend, then per gate (no limit, fixed permits, an
 * adaptive limit) over the whole run and over its last slice: admitted, refused per class, the most
 * in flight at the backend, p50 / p99 latency of the admitted work, goodput (completed per second, and
 * as a share of what the backend completes at its capacity).
 */
export function formatBackendReport(report: BackendReport, width: number = outputWidth()): string {
  const { backend } = report;
  const last = report.limits[0]?.slices.at(-1);
  const slow = backend.slow === undefined ? '' : `, ${ms(backend.slow.toMs)} from ${seconds(backend.slow.atMs)}`;
  const lines = [
    `${report.requests} requests over ${seconds(report.durationMs)}; backend: ${backend.capacity} in flight at full speed, service ${ms(backend.serviceMs)}${slow}`,
    '',
    'Whole run:',
    ...table(...backendTable(report.limits.map((l) => [l.label, l.total])), width),
  ];
  if (last !== undefined && report.limits[0]!.slices.length > 1)
    lines.push(
      '',
      `Last slice (${seconds(last.from)} to ${seconds(last.to)}):`,
      ...table(...backendTable(report.limits.map((l) => [l.label, l.slices.at(-1)!])), width),
    );
  return lines.join('\n') + '\n';
}

/** The table's header and rows for some gates' stats. */
export function backendTable(rows: readonly (readonly [string, OverloadStats])[]): [string[], string[][]] {
  const header = ['limit', 'admitted', 'refused', 'max in flight', 'p50 / p99', 'goodput', 'of capacity', 'limit now'];
  return [
    header,
    rows.map(([label, s]) => [
      label,
      String(s.admitted),
      refusedText(s.refused),
      String(s.peakInFlight),
      `${ms(s.p50Ms)} / ${ms(s.p99Ms)}`,
      `${s.goodput.toFixed(1)}/s`,
      s.goodputRatio.toFixed(2),
      s.permits === undefined ? '—' : String(s.permits),
    ]),
  ];
}

function refusedText(refused: Readonly<Record<string, number>>): string {
  const entries = Object.entries(refused);
  const total = entries.reduce((sum, [, n]) => sum + n, 0);
  // Without classes every arrival is `normal`: the total says it all.
  if (total === 0 || (entries.length === 1 && entries[0]![0] === 'normal')) return String(total);
  return `${total} (${entries.map(([c, n]) => `${c} ${n}`).join(', ')})`;
}

function ms(value: number | undefined): string {
  if (value === undefined) return '—';
  return value >= 1000 ? `${(value / 1000).toFixed(value >= 10_000 ? 0 : 1)}s` : `${Math.round(value)}ms`;
}
