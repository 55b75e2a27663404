import { accessSync, constants, statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { InvalidOptionError } from '@rl/core';

/**
 * Writes `data` to `path`, the file `option` names (`--report`, `--chart`), or throws an
 * `InvalidOptionError` on that option saying why it cannot be written (a folder that does not exist,
 * one not ours to write, a directory): the option to fix, not a stack.
 */
export async function writeOptionFile(option: string, path: string, data: string | Uint8Array): Promise<void> {
  try {
    await writeFile(path, data);
  } catch (error) {
    throw new InvalidOptionError(
      option,
      path,
      `a file that can be written (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    );
  }
}

/**
 * Throws an `InvalidOptionError` on `option` unless `path` can be written as a file: its folder exists
 * and is ours to write, and the path is no directory, nor a file we may not write. Checked before a
 * run, so that a long simulation is not thrown away at the end; {@link writeOptionFile} still reports
 * what only the write finds.
 */
export function checkWritable(option: string, path: string): void {
  let reason: string | undefined;
  try {
    const folder = dirname(resolve(path));
    if (!statSync(folder).isDirectory()) reason = 'ENOTDIR';
    else accessSync(folder, constants.W_OK);
    const existing = statSync(path, { throwIfNoEntry: false });
    if (existing?.isDirectory() === true) reason = 'EISDIR';
    else if (existing !== undefined) accessSync(path, constants.W_OK);
  } catch (error) {
    reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
  }
  if (reason !== undefined) throw new InvalidOptionError(option, path, `a file that can be written (${reason})`);
}
