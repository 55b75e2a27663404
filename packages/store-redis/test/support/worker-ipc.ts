/**
 * The worker's side of the IPC of the tests that fork worker processes (contention.test.ts,
 * leases.test.ts, idempotency.test.ts): a worker says `{ started }`, runs each `{ job }` it is sent and
 * answers `{ result }` or `{ error }`; the test reads them with `nextMessage` of `@rl/test-support`.
 */
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
