/** Figures as the reports print them. */

/** `n (p%)` of `of`; `0` when there is nothing. */
export function count(n: number, of: number): string {
  return of === 0 ? '0' : `${n} (${((100 * n) / of).toFixed(1)}%)`;
}

/** Milliseconds, to 0.1 ms at most. */
export function ms(value: number): string {
  return `${Number(value.toFixed(1))} ms`;
}

/** Seconds, to the millisecond at most. */
export function seconds(value: number): string {
  return `${Number((value / 1000).toFixed(3))} s`;
}
