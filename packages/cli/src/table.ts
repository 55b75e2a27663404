/** The width the text report fits when stdout is no terminal (a pipe, a file, CI logs). */
export const DEFAULT_WIDTH = 100;

/** The columns of the terminal stdout writes to, or {@link DEFAULT_WIDTH} when it is none. */
export function outputWidth(stdout: { isTTY?: boolean; columns?: number } = process.stdout): number {
  return stdout.isTTY === true && typeof stdout.columns === 'number' && stdout.columns >= 40
    ? stdout.columns
    : DEFAULT_WIDTH;
}

/** Rows padded to their columns' widths, numbers right-aligned: the header, a rule, the rows. */
function grid(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c]!.length)));
  const numeric = header.map((_, c) => c > 0 && rows.every((r) => /^[\d—]/.test(r[c]!)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, c) => (numeric[c] ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!)))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)];
}

const widest = (lines: readonly string[]): number => Math.max(0, ...lines.map((l) => l.length));

/**
 * A table of rows whose first cell is their label (a limit's call), within `width` columns:
 * - as one table when it fits;
 * - else the rows numbered (`#1`), their labels listed above, and the other columns in as many
 *   tables as it takes, each under the numbers, each within `width` (a column wider than `width` on
 *   its own gets a table of its own).
 * The order of rows and columns is kept; no cell is cut.
 */
export function table(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  width: number = DEFAULT_WIDTH,
): string[] {
  const whole = grid(header, rows);
  if (widest(whole) <= width) return whole;
  const numbers = rows.map((_, i) => `#${i + 1}`);
  const legend = rows.map((r, i) => `${numbers[i]}  ${r[0]}`);
  const columns = header.slice(1).map((h, c) => ({ header: h, cells: rows.map((r) => r[c + 1]!) }));
  const groups: (typeof columns)[] = [];
  for (const column of columns) {
    const last = groups.at(-1);
    const candidate = last === undefined ? undefined : [...last, column];
    if (candidate !== undefined && widest(groupGrid(candidate, numbers)) <= width)
      groups[groups.length - 1] = candidate;
    else groups.push([column]);
  }
  return [...legend, ...groups.flatMap((group) => ['', ...groupGrid(group, numbers)])];
}

/** The table of some columns, its rows named by their numbers. */
function groupGrid(
  columns: readonly { header: string; cells: readonly string[] }[],
  numbers: readonly string[],
): string[] {
  return grid(
    ['#', ...columns.map((c) => c.header)],
    numbers.map((n, i) => [n, ...columns.map((c) => c.cells[i]!)]),
  );
}
