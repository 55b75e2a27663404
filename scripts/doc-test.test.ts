/**
 * The doc test's reading of markdown (scripts/doc-test.mjs): which blocks are programs, and what their
 * comments say they print. The programs themselves are type-checked and run by
 * `node scripts/doc-test.mjs`, not here.
 */
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script, without declarations
import { FRAGMENT_MARKER, codeBlocks, expectedOutput, isProgram, markdownFiles, missingOutput } from './doc-test.mjs';

type Block = { line: number; lang: string; code: string; fragment: boolean };
const blocks = (text: string): Block[] => codeBlocks(text) as Block[];

describe('codeBlocks', () => {
  it('finds each fenced block with its language, its code and the line of its fence', () => {
    const text = [
      '# Title',
      '',
      '```ts',
      "import x from 'x';",
      'x();',
      '```',
      '',
      '```sh',
      'npm install x',
      '```',
    ].join('\n');
    expect(blocks(text)).toEqual([
      { line: 3, lang: 'ts', code: "import x from 'x';\nx();", fragment: false },
      { line: 8, lang: 'sh', code: 'npm install x', fragment: false },
    ]);
  });

  it('a block is a fragment when the marker is the closest non-blank line above its fence', () => {
    expect(FRAGMENT_MARKER).toBe('<!-- fragment -->');
    const marked = blocks(['<!-- fragment -->', '```ts', 'app.use(x);', '```'].join('\n'));
    expect(marked[0]).toMatchObject({ fragment: true });
    expect(blocks(['<!-- fragment -->', '', '```ts', 'a();', '```'].join('\n'))[0]).toMatchObject({ fragment: true });
    // The marker applies to the next block only, and only directly above it.
    const later = blocks(['<!-- fragment -->', 'Some text.', '```ts', 'a();', '```'].join('\n'));
    expect(later[0]).toMatchObject({ fragment: false });
  });

  it('a fence inside a block does not open another (the block ends at the first closing fence)', () => {
    const text = ['```md', 'text', '```', '```ts', 'b();', '```'].join('\n');
    expect(blocks(text).map((b) => [b.lang, b.code])).toEqual([
      ['md', 'text'],
      ['ts', 'b();'],
    ]);
  });
});

describe('markdownFiles: the docs whose blocks are tested', () => {
  it("the root README, every package's and every example's README, docs/*.md", () => {
    const files = markdownFiles() as string[];
    expect(files[0]).toBe('README.md');
    for (const file of [
      'packages/core/README.md',
      'examples/express/README.md',
      'examples/grafana/README.md',
      'docs/errors.md',
    ])
      expect(files).toContain(file);
  });
});

describe('isProgram', () => {
  it.each([
    ['ts', false, true],
    ['typescript', false, true],
    ['js', false, true],
    ['ts', true, false],
    ['sh', false, false],
    ['json', false, false],
    ['', false, false],
  ])('```%s (fragment: %s): %s', (lang, fragment, expected) => {
    expect(isProgram({ line: 1, lang, code: '', fragment })).toBe(expected);
  });
});

describe('expectedOutput and missingOutput: a program prints what its comments say', () => {
  it("the comment after a console.log's last ' // ', up to ' (' or '…'; other comments are not output", () => {
    const code = [
      'console.log(res.status, res.headers.get(\'ratelimit\')); // 200 "20-in-2s";r=15;t=1',
      'console.log((await fetch(`http://127.0.0.1:${port}/`)).status); // 200 (and a metric)',
      'console.log(header); // "exports";r=99;t=…',
      'console.log(x); // … anything',
      'const y = 1; // not output',
      'console.log(z);',
    ].join('\n');
    expect(expectedOutput(code)).toEqual(['200 "20-in-2s";r=15;t=1', '200', '"exports";r=99;t=']);
  });

  it('each expectation starts an output line, in order', () => {
    expect(missingOutput('true 15\n{ left: 14 }\n', ['true 15', '{ left: 14 }'])).toBeUndefined();
    expect(missingOutput('true 15\n', ['true 16'])).toBe('true 16');
    expect(missingOutput('b\na\n', ['a', 'b'])).toBe('b');
  });
});
