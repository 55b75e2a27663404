import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ALGORITHM_KINDS } from './algorithm.js';
import { ALGORITHM_FACTORIES } from './algorithms/index.js';
import { kindSuites } from './testing/scenarios.js';

/*
 * Where the algorithm kinds are named: DESIGN-NOTES' "Adding an algorithm means" lists the code files
 * a new algorithm is named in, and this test keeps that list true. A kind is named by its kind
 * (`ALGORITHM_KINDS`, kebab case) or by its factory (`ALGORITHM_FACTORIES`, camel case), as a word.
 *
 * Tests and examples use one algorithm or a few as examples, and may. What is caught is enumeration
 * and dispatch, in any code file (.ts, .mjs, .lua) under packages/ outside the lists below:
 * - enumeration: a file naming ENUMERATION kinds or more. Measured when this was written (6 kinds): 10
 *   files name 4 kinds, every one of them using algorithms as examples; the 12 naming 5 or 6 each list
 *   every algorithm or every rate algorithm (a table, an import list, a doc comment, a switch).
 * - dispatch: a file that branches on DISPATCH kinds or more (`case '<kind>'`, `kind === '<kind>'`, a
 *   table keyed by kind). Picking one kind (`kind === '<kind>'` once) is an example, not a dispatch.
 * A new list of every algorithm reads `ALGORITHM_FACTORIES` or the kind suites (`kindSuites`) instead.
 */
const ENUMERATION = 5;
const DISPATCH = 2;

/** Where a new algorithm is named, beside its own files and its family's kind suite: each of these names every kind. */
const NAMED_IN: Readonly<Record<string, string>> = {
  'packages/core/src/algorithm.ts': 'ALGORITHM_KINDS, the kinds',
  'packages/core/src/algorithms/index.ts': 'ALGORITHM_FACTORIES, the one list of the factories',
  'packages/core/src/index.ts': "the root's export of each factory and its options type",
  'packages/store-redis/test/parity.test.ts':
    'its option ranges in the random sequences the Lua twins and the TypeScript steps must agree on',
};

/** A kind's own files: its factory and step, its test, its Lua twin. */
const ownFiles = (kind: string): string[] => [
  `packages/core/src/algorithms/${kind}.ts`,
  `packages/core/src/algorithms/${kind}.test.ts`,
  `packages/store-redis/src/lua/${kind}.lua`,
];

/** A family's kind suites (`kinds/windows.ts`, …): each names the kinds of its family. */
const FAMILY_FILE = /^packages\/core\/src\/testing\/kinds\/[a-z-]+\.ts$/;

/** Files that enumerate or dispatch on the kinds although a new algorithm needs no line there, each with why. */
const ALLOWED: Readonly<Record<string, string>> = {
  'packages/core/src/algorithms/options.test.ts':
    "the factories' option errors at their bounds, a table per concern (a new algorithm tests its options in its own test)",
  'packages/cli/src/cli.ts': "the help text's example calls of `--limit`",
  'packages/cli/src/limits.test.ts': "a `--limit` call of each factory, parsed (the CLI's tests, unchanged)",
  'packages/cli/src/simulate.test.ts':
    'the rows of the README\'s "Choosing an algorithm" table, replayed (the README names the algorithms)',
  'packages/store-memory/src/memory-store.test.ts':
    "the memory store's tests, each with an algorithm or a few as examples",
  'packages/store-redis/bench/bench.mjs': 'the benchmark: the configurations it measures, one or two per kind',
  'packages/store-redis/test/groups.test.ts':
    "the grouped call's tests: a request's limits of several kinds (and a permit beside them) decided together, each family's script beside the others'",
  'packages/store-redis/test/support/contention-worker.ts':
    'the contention test worker: a switch over the four kinds the contention test chose',
  'packages/core/src/limiter/quota-leases-saturation.test.ts':
    'leases at saturation: how each kind gets its quota back (a window ends, a bucket refills, a sliding window slides) sets its pacing and its bound, a row per kind',
  'packages/store-redis/test/lease-saturation.test.ts':
    'leases at saturation on a real Redis: a row per leasable kind, each with the bound its recovery gives',
  'packages/core/src/limiter/rate-layouts.ts':
    'one algorithm per rate state layout, so that a ban reaches a key in every layout a per-call algorithm may use (a new algorithm of a new layout adds itself here)',
};

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

/** The code files under packages/ (not node_modules, dist, nor the generated Lua module), as paths from the root. */
function codeFiles(dir = join(ROOT, 'packages')): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name === 'dist') continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...codeFiles(path));
    else if (/\.(ts|mjs|lua)$/.test(entry.name) && !entry.name.endsWith('lua-scripts.generated.ts'))
      files.push(relative(ROOT, path).split('\\').join('/'));
  }
  return files.sort();
}

const factoryNames = Object.keys(ALGORITHM_FACTORIES);
const escape = (text: string): string => text.replace(/[-]/g, '\\-');
/** Per kind: its kind or its factory name, as a word. */
const naming = ALGORITHM_KINDS.map(
  (kind, i) => new RegExp(`(?<![\\w$-])(?:${escape(kind)}|${factoryNames[i]})(?![\\w$])`),
);
/** Per kind: a branch on it (a case, a comparison with a kind, a key of a table). */
const branching = ALGORITHM_KINDS.map((kind) => {
  const quoted = `['"\`]${escape(kind)}['"\`]`;
  return new RegExp(
    `case\\s+${quoted}|kind\\s*[!=]==?\\s*${quoted}|${quoted}\\s*[!=]==?\\s*[\\w.?]*kind\\b|${quoted}\\s*:`,
  );
});

/** The kinds a file names, and the kinds it branches on. */
function kindsIn(file: string): { named: string[]; branched: string[] } {
  const text = readFileSync(join(ROOT, file), 'utf8');
  return {
    named: ALGORITHM_KINDS.filter((_, i) => naming[i]!.test(text)),
    branched: ALGORITHM_KINDS.filter((_, i) => branching[i]!.test(text)),
  };
}

const enumerates = ({ named, branched }: { named: string[]; branched: string[] }): boolean =>
  named.length >= ENUMERATION || branched.length >= DISPATCH;

describe('kind names: where the algorithms are named (DESIGN-NOTES, "Adding an algorithm means")', () => {
  const files = codeFiles();

  it('the factories are the kinds in camel case, in their order; each kind has its own files and one kind suite', () => {
    expect(factoryNames).toEqual(
      ALGORITHM_KINDS.map((kind) => kind.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())),
    );
    expect(kindSuites.map((suite) => suite.kind)).toEqual([...ALGORITHM_KINDS]);
    for (const kind of ALGORITHM_KINDS) for (const file of ownFiles(kind)) expect(files, kind).toContain(file);
  });

  it.each(Object.entries(NAMED_IN))('%s names every kind (%s)', (file) => {
    expect(kindsIn(file).named).toEqual([...ALGORITHM_KINDS]);
  });

  it(`no other code file names ${ENUMERATION} kinds or more, or branches on ${DISPATCH} or more`, () => {
    const own = new Set(ALGORITHM_KINDS.flatMap(ownFiles));
    const offenders = files
      .filter((file) => !(file in NAMED_IN) && !(file in ALLOWED) && !own.has(file) && !FAMILY_FILE.test(file))
      .map((file) => ({ file, ...kindsIn(file) }))
      .filter(enumerates)
      .map(
        ({ file, named, branched }) =>
          `${file}: names ${named.join(', ')}${branched.length > 0 ? `; branches on ${branched.join(', ')}` : ''}`,
      );
    expect(
      offenders,
      'read ALGORITHM_FACTORIES or the kind suites instead, or add the file to ALLOWED with a reason',
    ).toEqual([]);
  });

  it.each(Object.entries(ALLOWED))('%s still enumerates or dispatches (%s): otherwise it leaves the list', (file) => {
    expect(files).toContain(file);
    expect(enumerates(kindsIn(file))).toBe(true);
  });

  it("DESIGN-NOTES' list names these files", () => {
    const notes = readFileSync(join(ROOT, 'DESIGN-NOTES.md'), 'utf8');
    const start = notes.indexOf('## Adding an algorithm means');
    const end = notes.indexOf('\n## ', start + 1);
    const section = notes.slice(start, end === -1 ? undefined : end);
    for (const file of [...Object.keys(NAMED_IN), ...ownFiles('<kind>'), 'packages/core/src/testing/kinds/<family>.ts'])
      expect(section, file).toContain(`\`${file}\``);
    expect(existsSync(join(ROOT, 'packages/store-redis/src/lua-scripts.generated.ts'))).toBe(true);
  });
});
