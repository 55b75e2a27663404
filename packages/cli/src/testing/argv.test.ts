import { describe, expect, it } from 'vitest';
import { argv } from './argv.js';

describe('argv: the words of a command line the tests write as typed', () => {
  const batches = ['--pattern', 'burst 2 at 0s'];
  const path = '/tmp/a file.csv';

  it.each([
    ['words at white space, new lines too', argv`simulate  --keys 3\n  --json`, ['simulate', '--keys', '3', '--json']],
    [
      'a quoted word keeps its spaces, and may be empty',
      argv`--pattern '50/s for 1s, 1/s for 2s' --x ''`,
      ['--pattern', '50/s for 1s, 1/s for 2s', '--x', ''],
    ],
    ['a value is one word as it is', argv`--traffic ${path} --json`, ['--traffic', '/tmp/a file.csv', '--json']],
    [
      "a list's words, first, last, side by side",
      argv`${batches} ${['--keys', '2']} --limit none ${path}`,
      ['--pattern', 'burst 2 at 0s', '--keys', '2', '--limit', 'none', '/tmp/a file.csv'],
    ],
    ['nothing', argv``, []],
  ])('%s', (_, words, expected) => {
    expect(words).toEqual(expected);
  });

  it.each([
    ['a stray quote', () => argv`--pattern '50/s for 1s`, /not a word/],
    ['a quote inside a word', () => argv`--x a'b'`, /not a word/],
    ['a value joined to the text before it', () => argv`--x=${'1'}`, /not a word of its own/],
    ['a value joined to the text after it', () => argv`${'a'}b`, /not a word of its own/],
    ['two values joined', () => argv`${'a'}${'b'}`, /not a word of its own/],
  ])('throws on %s', (_, write, message) => {
    expect(write).toThrowError(message);
  });
});
