/**
 * The errors page (docs/errors.md) and the errors agree: every code, of an error or of a process
 * warning, has a section; every section is a code; every error's message ends with the link to its
 * own section, after its own text.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  CostExceedsCapacityError,
  ERRORS_PAGE,
  InvalidAlgorithmError,
  InvalidCostError,
  InvalidKeyError,
  InvalidOptionError,
  RateLimitError,
  StoreClosedError,
  ResetUnconfirmedError,
  StoreError,
  StoreTimeoutError,
  UnsupportedError,
  errorDocsUrl,
  type RateLimitErrorCode,
} from './errors.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const page = readFileSync(join(root, 'docs/errors.md'), 'utf8');
/** The codes with a section: headings `## RL_…`. */
const sections = [...page.matchAll(/^## (RL_[A-Z_]+)$/gm)].map((m) => m[1]!);

/** One error of each code (a Record, so a new code does not compile until it is added here). */
const samples: Record<RateLimitErrorCode, () => RateLimitError> = {
  RL_INVALID_OPTION: () => new InvalidOptionError('tokenBucket.capacity', 0, 'an integer'),
  RL_INVALID_COST: () => new InvalidCostError(0),
  RL_COST_EXCEEDS_CAPACITY: () => new CostExceedsCapacityError(10, 5, 'tokenBucket'),
  RL_INVALID_KEY: () => new InvalidKeyError(''),
  RL_INVALID_ALGORITHM: () => new InvalidAlgorithmError(undefined, 'not an algorithm'),
  RL_UNSUPPORTED: () => new UnsupportedError('No.'),
  RL_STORE_ERROR: () => new StoreError('Redis EVALSHA failed: boom'),
  RL_STORE_TIMEOUT: () => new StoreTimeoutError(50),
  RL_STORE_CLOSED: () => new StoreClosedError(),
  RL_RESET_UNCONFIRMED: () => new ResetUnconfirmedError(3, 2, 30),
};

/** The codes of the process warnings: `code: 'RL_…'` in the packages' sources (tests excluded). */
function warningCodes(): Set<string> {
  const codes = new Set<string>();
  const visit = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) visit(path);
      else if (/\.ts$/.test(name) && !/\.test\.ts$/.test(name)) {
        for (const m of readFileSync(path, 'utf8').matchAll(/(?:code: |_CODE = )'(RL_[A-Z_]+)'/g)) codes.add(m[1]!);
      }
    }
  };
  for (const pkg of readdirSync(join(root, 'packages'))) {
    const src = join(root, 'packages', pkg, 'src');
    if (statSync(src, { throwIfNoEntry: false })?.isDirectory()) visit(src);
  }
  return codes;
}

describe('docs/errors.md', () => {
  it.each(Object.entries(samples))('%s has a section, and its message ends with the link to it', (code, make) => {
    expect(sections).toContain(code);
    const error = make();
    expect(error.code).toBe(code);
    expect(error.message.endsWith(` See ${ERRORS_PAGE}#${code.toLowerCase()}`)).toBe(true);
    expect(errorDocsUrl(code)).toBe(`https://github.com/rl-js/rl/blob/main/docs/errors.md#${code.toLowerCase()}`);
  });

  it("the message keeps the error's own text first (what users and tests match on)", () => {
    expect(samples.RL_INVALID_OPTION().message).toMatch(
      /^Invalid option tokenBucket\.capacity: 0\. Expected an integer\. See https:/,
    );
    expect(samples.RL_STORE_CLOSED().message).toMatch(/^The store is closed\. See /);
    // A text without its full stop gets one before the link.
    expect(new StoreError('connection refused').message).toBe(`connection refused. See ${ERRORS_PAGE}#rl_store_error`);
  });

  it('every warning code (process.emitWarning) has a section', () => {
    const warnings = warningCodes();
    expect(warnings.size).toBeGreaterThan(0);
    for (const code of warnings) expect(sections, `${code} has no section in docs/errors.md`).toContain(code);
  });

  it('every section is a code, once', () => {
    const known = new Set<string>([...Object.keys(samples), ...warningCodes()]);
    for (const code of sections)
      expect(known, `docs/errors.md has a section for ${code}, which is no code`).toContain(code);
    expect(new Set(sections).size).toBe(sections.length);
  });
});

describe('what a message shows of the value at fault', () => {
  it.each([
    [new InvalidCostError(1n), 'Invalid cost 1n:'],
    [new InvalidCostError(Symbol('five')), 'Invalid cost Symbol(five):'],
    [new InvalidKeyError(Symbol('k')), 'Symbol(k)'],
    [new InvalidCostError('5'), 'Invalid cost "5":'],
  ])('%s', (error, shown) => {
    expect(error.message).toContain(shown);
  });
});
