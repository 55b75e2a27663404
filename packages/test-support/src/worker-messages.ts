/**
 * The test's side of the IPC of tests that fork worker processes: a worker says `{ started }`, is
 * sent `{ job }`s, says `{ ready }` when a job waits for the test's `'go'`, and answers `{ result }` or
 * `{ error }`. (The worker's side is each package's own: it cannot load this package, which loads vitest.)
 */
import type { ChildProcess } from 'node:child_process';

/** What a worker sends: `started` once, then per job whatever the job's protocol adds, and its `result` or `error`. */
export interface WorkerMessage {
  started?: boolean;
  ready?: boolean;
  error?: string;
}

/** The next message of `worker` that `matches`; rejects on an error message or when the worker exits. */
export function nextMessage<M extends WorkerMessage>(
  worker: ChildProcess,
  matches: (message: M) => boolean,
): Promise<M> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: M) => {
      if (message.error !== undefined) finish(() => reject(new Error(message.error)));
      else if (matches(message)) finish(() => resolve(message));
    };
    const onExit = (code: number | null) => finish(() => reject(new Error(`worker exited (code ${code})`)));
    const finish = (settle: () => void) => {
      worker.off('message', onMessage);
      worker.off('exit', onExit);
      settle();
    };
    worker.on('message', onMessage);
    worker.once('exit', onExit);
  });
}

/** Resolves once every worker has said `{ started }`. */
export async function workersStarted(workers: readonly ChildProcess[]): Promise<void> {
  await Promise.all(workers.map((worker) => nextMessage(worker, (m) => m.started === true)));
}

/**
 * Sends each worker its job (`jobs[i]` to `workers[i]`), waits until every one says `{ ready }`, then
 * sends them all `'go'` at once; resolves to their results, in the workers' order.
 */
export async function releasedTogether<R>(workers: readonly ChildProcess[], jobs: readonly unknown[]): Promise<R[]> {
  const ready = workers.map((worker) => nextMessage(worker, (m) => m.ready === true));
  workers.forEach((worker, i) => worker.send({ job: jobs[i] }));
  await Promise.all(ready);
  const results = workers.map((worker) =>
    nextMessage<WorkerMessage & { result?: R }>(worker, (m) => m.result !== undefined),
  );
  for (const worker of workers) worker.send('go');
  return (await Promise.all(results)).map((m) => m.result!);
}
