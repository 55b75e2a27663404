/**
 * What a call reports besides its result: the `InvalidOptionError` it throws, the process warnings it
 * emits. (@rl/core's own tests, which cannot depend on this package, have the same in
 * `packages/core/src/testing/capture.ts`.)
 */
import { InvalidOptionError } from '@rl/core';
import { expect, vi } from 'vitest';

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

/** Collects the process warnings with `code` while `body` runs (a warning is emitted on a later tick: this waits one). */
export async function collectWarnings(
  code: string,
  body: (warnings: readonly Error[]) => Promise<void>,
): Promise<void> {
  const warnings: Error[] = [];
  const onWarning = (warning: Error & { code?: string }): void => {
    if (warning.code === code) warnings.push(warning);
  };
  process.on('warning', onWarning);
  try {
    await body(warnings);
  } finally {
    process.off('warning', onWarning);
  }
}

/**
 * Collects the process warnings with `code` emitted while `body` runs, without printing them (a
 * passing run stays quiet); other warnings go on as usual.
 */
export async function captureWarnings(
  code: string,
  body: (messages: readonly string[]) => Promise<void>,
): Promise<void> {
  const messages: string[] = [];
  const emit = process.emitWarning.bind(process) as (...args: unknown[]) => void;
  const spy = vi.spyOn(process, 'emitWarning').mockImplementation(((warning: string | Error, options?: unknown) => {
    if ((options as { code?: string } | undefined)?.code === code) messages.push(String(warning));
    else emit(warning, options);
  }) as typeof process.emitWarning);
  try {
    await body(messages);
  } finally {
    spy.mockRestore();
  }
}
