/**
 * What a call reports besides its result: the `InvalidOptionError` it throws (`rejection`, exported by
 * `@rl/core/testing` for a store's tests of its options, and through `@rl/test-support` for the other
 * packages' tests), the process warnings it emits (`warningsOf`, for @rl/core's own tests).
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
