/**
 * A vitest reporter that says why tests were skipped, once per reason, at the end of the run. vitest's
 * default reporter counts skips per file ("5 skipped") and shows no reason: `it.skipIf` and
 * `describe.skipIf` take none. A test gives its reason with `context.skip(note)`, or by carrying
 * `(skipped: <reason>)` in its name or in one of its suites' (the name then says it wherever it is
 * listed). Skips without a reason are counted together, with their files.
 */
import type { Reporter, TestModule } from 'vitest/node';

/** A skipped test: its file (relative to the root), its full name, the note of `context.skip(note)`. */
export interface SkippedTest {
  file: string;
  fullName: string;
  note?: string | undefined;
}

/** The reason in `(skipped: …)` of a name (parentheses inside it balanced), or undefined. */
export function reasonInName(name: string): string | undefined {
  const start = name.indexOf('(skipped: ');
  if (start < 0) return undefined;
  let depth = 0;
  for (let i = start; i < name.length; i++) {
    if (name[i] === '(') depth++;
    else if (name[i] === ')' && --depth === 0) return name.slice(start + '(skipped: '.length, i);
  }
  return undefined;
}

/**
 * The lines that say why: one per reason and file (`5 tests of <file>: <reason>`), then one for the
 * skips that gave none; no lines when nothing was skipped.
 */
export function skipReasonLines(skipped: readonly SkippedTest[]): string[] {
  const byReason = new Map<string, number>();
  const unexplained = new Map<string, number>();
  for (const test of skipped) {
    const reason = test.note ?? reasonInName(test.fullName);
    if (reason === undefined) unexplained.set(test.file, (unexplained.get(test.file) ?? 0) + 1);
    else byReason.set(`${test.file}\0${reason}`, (byReason.get(`${test.file}\0${reason}`) ?? 0) + 1);
  }
  const tests = (n: number) => `${n} test${n === 1 ? '' : 's'}`;
  const lines = [...byReason].map(([key, n]) => {
    const [file, reason] = key.split('\0') as [string, string];
    return `  ${tests(n)} of ${file}: ${reason}`;
  });
  if (unexplained.size > 0) {
    const n = [...unexplained.values()].reduce((a, b) => a + b, 0);
    lines.push(
      `  ${tests(n)} without a reason given (context.skip(note), or "(skipped: …)" in the name, gives one): ${[...unexplained].map(([file, count]) => `${file} (${count})`).join(', ')}`,
    );
  }
  return lines.length === 0 ? [] : ['Skipped, and why:', ...lines];
}

/** The skipped tests of the run's modules (todo tests are not skips). */
export function skippedTests(modules: readonly TestModule[]): SkippedTest[] {
  const skipped: SkippedTest[] = [];
  for (const module of modules) {
    for (const test of module.children.allTests()) {
      const result = test.result();
      if (result.state !== 'skipped' || test.options.mode === 'todo') continue;
      skipped.push({ file: module.relativeModuleId, fullName: test.fullName, note: result.note });
    }
  }
  return skipped;
}

/** The reporter: after the default one's summary, the lines of {@link skipReasonLines}. */
export class SkipReasons implements Reporter {
  onTestRunEnd(modules: readonly TestModule[]): void {
    const lines = skipReasonLines(skippedTests(modules));
    if (lines.length > 0) process.stdout.write(`${lines.join('\n')}\n`);
  }
}

export default SkipReasons;
