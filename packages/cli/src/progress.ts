/**
 * A progress callback for {@link simulate}'s `onProgress` that writes to `write` (stderr): on a
 * terminal one line rewritten in place, otherwise (`--progress`) a line per tenth of each limit.
 */
export function progressReporter(
  labels: readonly string[],
  write: (text: string) => void,
  tty: boolean,
): (limit: number, done: number, total: number) => void {
  let lastTenth = -1;
  let lastLimit = -1;
  return (limit, done, total) => {
    const fraction = total === 0 ? 1 : done / total;
    const text = `simulate ${limit + 1}/${labels.length} ${labels[limit]}: ${done}/${total} (${Math.floor(fraction * 100)}%)`;
    if (tty) {
      write(`\r\x1b[2K${text}${done === total && limit === labels.length - 1 ? '\n' : ''}`);
      return;
    }
    const tenth = Math.floor(fraction * 10);
    if (limit === lastLimit && tenth === lastTenth) return;
    lastLimit = limit;
    lastTenth = tenth;
    write(`${text}\n`);
  };
}
