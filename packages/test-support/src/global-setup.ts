/**
 * The root vitest config's globalSetup: a test run leaves nothing behind. At the start it gives the
 * run a temporary directory of its own (`TMPDIR`, `TMP` and `TEMP` point into it, so `os.tmpdir()`
 * of every worker and every process a test starts is there) and a mark (`RL_TEST_RUN=<id>` in the
 * environment the workers, and all they start, inherit). At the end, once every file has run, it
 * lists what is left: the processes with the mark (see leftovers.ts) and the entries of the directory.
 * Anything left fails the run (exit code 1), named on stderr, and is then stopped and removed, so the
 * next run starts clean. See docs/design/testing.md, "Nothing left behind".
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  canListProcesses,
  killProcesses,
  leftovers,
  runnerWorkers,
  TEST_RUN_VARIABLE,
  type MarkedProcess,
} from './leftovers.js';

/** tsx keeps its compile cache in `<tmpdir>/tsx-<uid>` across runs by design: not something a test left. */
const KEPT = (name: string): boolean => /^tsx-\d+$/.test(name);

/** The variables that name the temporary directory (POSIX, then Windows). */
const TEMP_VARIABLES = ['TMPDIR', 'TMP', 'TEMP'] as const;

export interface RunCheckOptions {
  /** Where the check writes (default: stderr). */
  write?: (text: string) => void;
  /**
   * How long the end waits for what is still ending: the workers vitest is terminating (their exit
   * hooks stop their Redis servers), then what is left: ms in all, default 10000 (vitest's own
   * teardownTimeout). Only spent while a worker or something left is there.
   */
  settleMs?: number;
}

/** What the end of a run found. */
export interface RunLeftovers {
  processes: MarkedProcess[];
  /** Names in the run's temporary directory. */
  entries: string[];
}

/**
 * Marks the run and gives it its temporary directory; returns the check to run at its end, which
 * restores the environment, fails the run on what was left (see above) and resolves to it (empty
 * lists when nothing was).
 */
export function startRunCheck(options: RunCheckOptions = {}): () => Promise<RunLeftovers> {
  const write = options.write ?? ((text: string) => process.stderr.write(text));
  const settleMs = options.settleMs ?? 10_000;
  const id = randomUUID();
  const dir = mkdtempSync(join(tmpdir(), 'rl-test-run-'));
  const saved = new Map([...TEMP_VARIABLES, TEST_RUN_VARIABLE].map((name) => [name, process.env[name]]));
  for (const name of TEMP_VARIABLES) process.env[name] = dir;
  process.env[TEST_RUN_VARIABLE] = id;
  const run = { id, dir, runner: process.pid, kept: KEPT };
  return async () => {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    // A worker still ending may still start something (a Cluster still starting when its file
    // failed) or stop it (its exit hooks): the count is made once the workers are gone.
    const deadline = Date.now() + settleMs;
    while (runnerWorkers(run.runner).length > 0 && Date.now() < deadline) await pause(100);
    let left = leftovers(run);
    while ((left.processes.length > 0 || left.entries.length > 0) && Date.now() < deadline) {
      await pause(100);
      left = leftovers(run);
    }
    if (left.processes.length > 0 || left.entries.length > 0) {
      write(describeLeftovers(left, dir));
      killProcesses(left.processes);
      process.exitCode = 1;
    }
    rmSync(dir, { recursive: true, force: true });
    return left;
  };
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The message of a run that left something: each process and entry, and what happens to them. */
export function describeLeftovers(left: RunLeftovers, dir: string): string {
  const lines = [
    `\nThe tests left ${left.processes.length} process${left.processes.length === 1 ? '' : 'es'} running and ${left.entries.length} entr${left.entries.length === 1 ? 'y' : 'ies'} in their temporary directory (${dir}):`,
    ...left.processes.map(
      (p) =>
        `  process ${p.pid} (parent ${p.ppid}): ${p.command.length > 200 ? `${p.command.slice(0, 200)}…` : p.command}`,
    ),
    ...left.entries.map((name) => `  ${join(dir, name)}`),
    'The test (or fixture) that started each must stop it, or remove it, in its afterAll/afterEach. They are stopped and removed now; the run fails.',
    '',
  ];
  return lines.join('\n');
}

/** vitest's globalSetup: the check of the whole run (the platform note when processes cannot be listed). */
export default function setup(): () => Promise<void> {
  if (!canListProcesses())
    process.stdout.write(
      `The check for processes left by the tests is skipped: it reads /proc, which ${process.platform} has not (temporary directories are still checked).\n`,
    );
  const check = startRunCheck();
  return async () => {
    await check();
  };
}
