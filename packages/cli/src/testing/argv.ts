/** A word of the text: `'…'` (quoted, spaces and all) or a run of other characters; anything else is a mistake. */
const WORD = /(?<=^|\s)(?:'([^']*)'|([^\s']+))(?=\s|$)|(\S+)/g;

/**
 * The words of an `rl` command line, written as a shell line is typed:
 * argv`simulate ${TWO_BATCHES} --pattern '50/s for 2s' --json`. The text splits at white space (new
 * lines too), a word in single quotes keeps its spaces, and each `${value}` is one word as it is (a
 * path), or, for a list, its words. A stray quote, or a value not apart from the text beside it
 * (`--x=${v}`), throws. For the tests only: not exported from the package.
 */
export function argv(text: TemplateStringsArray, ...values: (string | readonly string[])[]): string[] {
  const words: string[] = [];
  text.forEach((chunk, i) => {
    for (const [word, quoted, plain, mistake] of chunk.matchAll(WORD)) {
      if (mistake !== undefined) throw new Error(`argv: ${JSON.stringify(word)} is not a word (a stray quote?)`);
      words.push(quoted ?? plain!);
    }
    if (i === values.length) return;
    const next = text[i + 1]!;
    const apartBefore = /\s$/.test(chunk) || (i === 0 && chunk === '');
    const apartAfter = /^\s/.test(next) || (i + 1 === values.length && next === '');
    if (!apartBefore || !apartAfter) throw new Error(`argv: \${${JSON.stringify(values[i])}} is not a word of its own`);
    const value = values[i]!;
    words.push(...(typeof value === 'string' ? [value] : value));
  });
  return words;
}
