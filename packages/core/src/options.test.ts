import { describe, expect, it } from 'vitest';
import { InvalidOptionError } from './errors.js';
import { checkOptions } from './options.js';

/** The error `checkOptions` throws for `options`. */
function rejection(options: unknown, hints?: Record<string, string>): InvalidOptionError {
  try {
    checkOptions(options, ['a', 'b'], 'thing', hints);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidOptionError);
    return error as InvalidOptionError;
  }
  throw new Error(`accepted ${JSON.stringify(options)}`);
}

describe('checkOptions', () => {
  it('returns the options when every key is allowed', () => {
    const options = { a: 1 };
    expect(checkOptions(options, ['a', 'b'], 'thing')).toBe(options);
  });

  it('one unknown option: its field, its value, and what the owner takes', () => {
    const error = rejection({ a: 1, c: 3 });
    expect(error).toMatchObject({ code: 'RL_INVALID_OPTION', field: 'thing.c', fields: ['thing.c'], value: 3 });
    expect(error.message).toMatch(/^Invalid option thing\.c: 3\. Expected no such option; thing takes a, b\./);
  });

  it('every unknown option at once, in one error: fields lists each, field is the first', () => {
    const error = rejection({ c: 3, a: 1, d: 4, e: 5 });
    expect(error).toMatchObject({ field: 'thing.c', fields: ['thing.c', 'thing.d', 'thing.e'], value: 3 });
    expect(error.message).toMatch(
      /^Invalid options thing\.c, thing\.d, thing\.e\. Expected no such options: c; d; e; thing takes a, b\./,
    );
  });

  it("a peer's option name is named with its rl equivalent", () => {
    const hints = { windowMs: 'use window' };
    expect(rejection({ windowMs: 1000 }, hints).message).toMatch(
      /^Invalid option thing\.windowMs: 1000\. Expected no such option \(use window\); thing takes a, b\./,
    );
    expect(rejection({ windowMs: 1000, z: 1 }, hints).message).toContain(
      'no such options: windowMs (use window); z; thing takes a, b.',
    );
  });

  it("only the hints' own names: an inherited name such as toString is no hint", () => {
    expect(rejection({ toString: 1 }, {}).message).toContain('Expected no such option; thing takes');
  });

  it('not an object: the owner itself', () => {
    for (const value of [null, 5, 'x', []])
      expect(rejection(value)).toMatchObject({ field: 'thing', fields: ['thing'] });
  });
});
