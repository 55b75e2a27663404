/**
 * What a call reports besides its result, for @rl/core's own tests: the `InvalidOptionError` it
 * throws, the process warnings it emits. Not part of `@rl/core/testing` (index.ts does not export it).
 * `@rl/test-support` has the same helpers for the other packages' tests; core's tests cannot import
 * it, because it depends on @rl/core (a dependency back would be a circle turbo rejects).
 */
import { expect, vi } from 'vitest';
import { InvalidOptionError } from '../errors.js';

/** The InvalidOptionError `build` throws; fails the test when it throws something else or nothing. */
export function rejection(build: () => unknown): InvalidOptionError {
  try {
    build();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidOptionError);
    return error as InvalidOptionError;
  }
  throw new Error('accepted: expected an InvalidOptionError');
}

/**
 * The messages of the process warnings with `code` that `body` emits (`process.emitWarning`, at
 * once: rl emits a warning while a call runs), in order. No warning is printed or sent to
 * `process.on('warning')` while `body` runs, of `code` or any other.
 */
export function warningsOf(code: string, body: () => void): string[] {
  const messages: string[] = [];
  const spy = vi.spyOn(process, 'emitWarning').mockImplementation(((
    warning: string | Error,
    options?: { code?: string },
  ) => {
    if (options?.code === code) messages.push(String(warning));
  }) as typeof process.emitWarning);
  try {
    body();
  } finally {
    spy.mockRestore();
  }
  return messages;
}
