import { describe, expect, it } from 'vitest';
import { reasonInName, skipReasonLines } from './skip-reasons.js';

describe('the reasons of skipped tests, printed at the end of a run', () => {
  it('a reason is the note of context.skip(note), else the "(skipped: …)" of the name, parentheses inside it kept', () => {
    expect(
      reasonInName(
        'rl simulate --report in headless Chromium (skipped: no Chromium on the PATH (Debian: apt-get install -y chromium; or set RL_CHROMIUM); .ci/run installs it) > loads',
      ),
    ).toBe('no Chromium on the PATH (Debian: apt-get install -y chromium; or set RL_CHROMIUM); .ci/run installs it');
    expect(reasonInName('on Bun > releases a permit (skipped: workerd (through miniflare) cannot see it)')).toBe(
      'workerd (through miniflare) cannot see it',
    );
    expect(reasonInName('a test (of something) that says no reason')).toBeUndefined();
    expect(reasonInName('unbalanced (skipped: (never closed')).toBeUndefined();
  });

  it('one line per reason and file with its count, then the skips without a reason, counted per file; nothing when nothing was skipped', () => {
    const browser = 'browser (skipped: no Chromium on the PATH) > ';
    expect(
      skipReasonLines([
        ...['loads', 'renders', 'points'].map((name) => ({
          file: 'packages/cli/src/html-report.test.ts',
          fullName: browser + name,
        })),
        {
          file: 'packages/hono/test/runtimes.test.ts',
          fullName: 'on workerd > releases a permit',
          note: "miniflare does not forward a client's disconnect",
        },
        { file: 'packages/core/src/testing/conformance.test.ts', fullName: 'token bucket > refills' },
        { file: 'packages/core/src/testing/conformance.test.ts', fullName: 'gcra > refills' },
        { file: 'scripts/recipe-store.test.ts', fullName: 'reserved > …' },
      ]),
    ).toEqual([
      'Skipped, and why:',
      '  3 tests of packages/cli/src/html-report.test.ts: no Chromium on the PATH',
      "  1 test of packages/hono/test/runtimes.test.ts: miniflare does not forward a client's disconnect",
      '  3 tests without a reason given (context.skip(note), or "(skipped: …)" in the name, gives one): packages/core/src/testing/conformance.test.ts (2), scripts/recipe-store.test.ts (1)',
    ]);
    expect(skipReasonLines([])).toEqual([]);
  });
});
