/**
 * The IPC of the tests that fork worker processes (contention.test.ts, leases.test.ts): a worker
 * says `{ started }`, runs each `{ job }` it is sent and answers `{ result }` or `{ error }`; the test
 * reads the next message that matches with {@link nextMessage}.
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

/** In a worker: runs every `{ job }` the test sends with `run` and answers `{ result }` or `{ error }`; then says `{ started }`. */
export function serveJobs<J, R>(run: (job: J) => Promise<R>): void {
  process.on('message', (message: { job?: J }) => {
    if (message.job === undefined) return;
    run(message.job).then(
      (result) => process.send!({ result }),
      (error: unknown) => process.send!({ error: String(error) }),
    );
  });
  process.send!({ started: true });
}
