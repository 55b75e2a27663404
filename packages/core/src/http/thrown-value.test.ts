import { describe, expect, it } from 'vitest';
import { forwardableError } from './thrown-value.js';

describe('forwardableError: what reaches the framework error path for a thrown value', () => {
  it.each([new Error('boom'), { status: 403 }, 'a message', 1, true])('passes %s through unchanged', (thrown) => {
    expect(forwardableError(thrown)).toBe(thrown);
  });

  it.each([
    [undefined, 'undefined'],
    [null, 'null'],
    [false, 'false'],
    [0, '0'],
    [Number.NaN, 'NaN'],
    [0n, '0n'],
    ['', '""'],
    ['route', '"route"'],
    ['router', '"router"'],
  ])(
    'wraps %s, which a framework would read as no error or a routing signal, in an Error naming it',
    (thrown, named) => {
      const error = forwardableError(thrown) as Error;
      expect(error).toBeInstanceOf(Error);
      expect(error.message).toContain(`threw or rejected with ${named} instead of an Error`);
      expect(error.cause).toBe(thrown);
    },
  );
});
