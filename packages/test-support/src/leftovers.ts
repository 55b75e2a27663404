/**
 * What a test run left behind: its processes, and the entries of the run's own temporary directory.
 * Used by `global-setup.ts` (the vitest globalSetup of the root config), which marks the run and
 * checks it at its end.
 *
 * A process is the run's when its environment has `RL_TEST_RUN=<id>` (the global setup sets it in
 * vitest's environment before any worker starts, and every process a test starts inherits it: a
 * runtime behind a launcher, a browser, wherever it was reparented to), or when its working directory
 * is inside the run's temporary directory: `redis-server` overwrites its environment with its process
 * title, but works in the directory its fixture made for it (`--dir`). Other runs on the same machine
 * (another checkout's tests) have another id and another directory: never counted or stopped.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { sep } from 'node:path';

/** The variable that marks a run's processes. */
export const TEST_RUN_VARIABLE = 'RL_TEST_RUN';

/** A process of the run. */
export interface MarkedProcess {
  pid: number;
  ppid: number;
  /** Its command line, arguments separated by spaces. */
  command: string;
}

/** False where processes cannot be listed with their environment (`/proc`: Linux only). */
export function canListProcesses(): boolean {
  try {
    readdirSync('/proc/self');
    return true;
  } catch {
    return false;
  }
}

/** The live processes whose environment has `RL_TEST_RUN=<runId>` (see {@link processesWith}). */
export function markedProcesses(runId: string): MarkedProcess[] {
  return processesWith(TEST_RUN_VARIABLE, runId);
}

/** The live processes whose environment has `variable=value` (see {@link liveProcesses}). */
export function processesWith(variable: string, value: string): MarkedProcess[] {
  const mark = `${variable}=${value}`;
  return liveProcesses((pid) => readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(mark));
}

/** The live processes whose working directory is `dir` or inside it (see {@link liveProcesses}). */
export function processesWithin(dir: string): MarkedProcess[] {
  return liveProcesses((pid) => {
    const cwd = readlinkSync(`/proc/${pid}/cwd`);
    return cwd === dir || cwd.startsWith(dir + sep);
  });
}

/**
 * The runner's vitest workers still alive (`…/vitest/dist/workers/forks.js`, `threads.js`): vitest
 * starts terminating a worker when its file is done, and closes its pool after the global teardown.
 */
export function runnerWorkers(runner: number): MarkedProcess[] {
  return liveProcesses(() => true).filter(
    (p) => p.ppid === runner && /[/\\]vitest[/\\]dist[/\\]workers[/\\]/.test(p.command),
  );
}

/**
 * The live processes for which `chosen(pid)` is true, from `/proc` (none where there is no `/proc`:
 * see {@link canListProcesses}). A process that ends while it is read, or that cannot be read
 * (another user's, a zombie's: `chosen` throws), is not listed.
 */
function liveProcesses(chosen: (pid: string) => boolean): MarkedProcess[] {
  const found: MarkedProcess[] = [];
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return [];
  }
  for (const pid of pids) {
    try {
      if (!chosen(pid)) continue;
      // The parent is the 2nd field after the command's name, which is in parentheses and may hold any byte.
      const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
      found.push({ pid: Number(pid), ppid, command });
    } catch {
      // ended meanwhile, or not ours to read
    }
  }
  return found;
}

/**
 * What the run left: its processes (marked, or working inside `dir`) other than the runner itself (`runner`, vitest's main
 * process) and the runner's own children (its workers and services: no test runs in the runner), and
 * the entries of `dir` (the run's temporary directory) but those `kept` names.
 */
export function leftovers(run: { id: string; dir: string; runner: number; kept?: (name: string) => boolean }): {
  processes: MarkedProcess[];
  entries: string[];
} {
  const found = new Map([...markedProcesses(run.id), ...processesWithin(run.dir)].map((p) => [p.pid, p]));
  const processes = [...found.values()].filter((p) => p.pid !== run.runner && p.ppid !== run.runner);
  let entries: string[];
  try {
    entries = readdirSync(run.dir).filter((name) => !(run.kept?.(name) ?? false));
  } catch {
    entries = [];
  }
  return { processes, entries };
}

/** Sends SIGKILL to each process (the process itself, not its group: it may share the runner's). */
export function killProcesses(processes: readonly MarkedProcess[]): void {
  for (const p of processes) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}
