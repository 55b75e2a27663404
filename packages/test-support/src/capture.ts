/**
 * What a call reports besides its result: the `InvalidOptionError` it throws (`rejection`, from
 * `@rl/core/testing`), the process warnings it emits.
 */
import { vi } from 'vitest';

export { rejection } from '@rl/core/testing';

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
