/**
 * The log of the check scripts (scripts/lib/check-log.mjs): pack-test's passing run is one line, and a
 * failing one shows every step up to its failure.
 */
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a JavaScript module of the scripts, without declarations
import { checkLog } from './lib/check-log.mjs';

interface Log {
  failures: string[];
  fail(message: string): void;
  ok(message: string): void;
  note(message: string): void;
  step(message: string): void;
}

/** A log writing into `lines`, its step times made constant. */
function logInto(lines: string[], quiet: boolean): Log {
  return checkLog({ quiet, write: (line: string) => lines.push(line.replace(/\(\d+\.\ds\)$/, '(t)')) }) as Log;
}

describe('checkLog', () => {
  it('quiet: a run without failures writes nothing (the script prints its one summary line)', () => {
    const lines: string[] = [];
    const log = logInto(lines, true);
    log.step('npm install of the tarballs');
    log.note('npm install rl-core-0.1.0.tgz @nestjs/common@^11 @opentelemetry/api@~1.9.1 @types/node@^20');
    log.ok('installed 11 tarballs');
    expect([lines, log.failures]).toEqual([[], []]);
  });

  it('quiet: the first failure writes every step, ok and note before it, then the log goes on as it happens', () => {
    const lines: string[] = [];
    const log = logInto(lines, true);
    log.step('pack');
    log.ok('@rl/core packed');
    log.note('@rl/cli has no README.md');
    log.step('install');
    log.fail('npm install failed (exit 1)');
    log.ok('after the failure');
    log.fail('a second failure');
    expect(lines).toEqual([
      '\n== pack (t)',
      '  ok   @rl/core packed',
      '  note @rl/cli has no README.md',
      '\n== install (t)',
      '  FAIL npm install failed (exit 1)',
      '  ok   after the failure',
      '  FAIL a second failure',
    ]);
    expect(log.failures).toEqual(['npm install failed (exit 1)', 'a second failure']);
  });

  it('not quiet (doc-test, pack-test --verbose): every line as it happens', () => {
    const lines: string[] = [];
    const log = logInto(lines, false);
    log.step('pack');
    log.ok('@rl/core packed');
    log.note('a note');
    expect(lines).toEqual(['\n== pack (t)', '  ok   @rl/core packed', '  note a note']);
  });
});
