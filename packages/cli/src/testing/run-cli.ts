import { main } from '../cli.js';

/** What one run of the command printed, and its exit code. */
export interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `rl <args>` in this process, as bin.ts does, collecting what it prints instead of writing it;
 * `tty` says whether stderr is a terminal (progress and colours follow it). For the tests only: not
 * exported from the package.
 */
export async function rl(args: string[], tty = false): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const code = await main(args, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t), stderrIsTTY: tty });
  return { code, stdout, stderr };
}
