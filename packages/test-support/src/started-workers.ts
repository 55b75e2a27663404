import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll } from 'vitest';
import { workersStarted } from './worker-messages.js';
import type { WorkerScript } from './worker-script.js';

/** The processes of {@link useStartedWorkers}. */
export interface StartedWorkers {
  /** The processes, in the order forked; valid once beforeAll has run (empty before). */
  readonly all: readonly ChildProcess[];
}

/**
 * `count` processes of `script`, forked in beforeAll and ready once each has said `{ started }`, killed
 * (SIGKILL) in afterAll: for a test file whose cases all hand their jobs to the same processes, so that
 * each case does not pay for starting them. Call it after `useWorkerScript` (its beforeAll bundles the
 * script first).
 */
export function useStartedWorkers(script: WorkerScript, count: number): StartedWorkers {
  let all: ChildProcess[] = [];
  beforeAll(async () => {
    all = Array.from({ length: count }, () => script.fork());
    await workersStarted(all);
  }, 60_000);
  afterAll(() => {
    for (const worker of all) worker.kill('SIGKILL');
  });
  return {
    get all() {
      return all;
    },
  };
}
