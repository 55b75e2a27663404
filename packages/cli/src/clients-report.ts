import { count, seconds } from './format.js';
import type { SimulationReport } from './simulate.js';

/**
 * The clients' table, cell by cell (the text and the HTML reports show it under the limits' table);
 * undefined when the report has no clients.
 */
export function clientsTable(
  report: SimulationReport,
): { title: string; header: string[]; rows: string[][] } | undefined {
  const first = report.limits[0]?.clients;
  if (first === undefined) return undefined;
  const slice = `${report.sliceMs} ms`;
  const header = [
    'limit',
    'attempts',
    'admitted',
    '429s',
    '429s / admitted',
    'gave up',
    'most attempts',
    'held by pacing',
    `peak retries / ${slice}`,
    `2nd wave: slices, peak / mean per ${slice}`,
    'last admitted',
  ];
  const rows = report.limits.map((l) => {
    const c = l.clients!;
    const wave = c.secondWave;
    return [
      l.label,
      String(c.attempts),
      count(c.admitted, c.requests),
      String(c.denied),
      c.deniedPerAdmitted === null ? '—' : c.deniedPerAdmitted.toFixed(2),
      String(c.gaveUp),
      String(c.maxAttempts),
      String(c.held),
      String(c.peakRetrySlice),
      wave === null ? '—' : `${wave.slices}, ${wave.peak} / ${wave.mean.toFixed(0)}`,
      c.lastThroughMs === null ? '—' : seconds(c.lastThroughMs),
    ];
  });
  const title = `${first.clients} client${first.clients === 1 ? '' : 's'}, --retry ${first.retry}: at most ${first.retries + 1} attempt${first.retries === 0 ? '' : 's'} per request (admitted: of ${first.requests} requests)`;
  return { title, header, rows };
}
