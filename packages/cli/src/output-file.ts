import { writeFile } from 'node:fs/promises';
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
