import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * The path to give `node --import` (or `fork(…, { execArgv: ['--import', tsLoaderRegistration] })`) so
 * that a child process runs the workspace's TypeScript sources, resolving `@rl/*` like vitest does.
 */
export const tsLoaderRegistration = fileURLToPath(new URL('../register-ts.mjs', import.meta.url));

/**
 * Forks a Node process running the TypeScript module at `modulePath` (with {@link tsLoaderRegistration}),
 * with an IPC channel for the test's messages, its stdout and stderr the test's own.
 */
export function forkTsWorker(modulePath: string): ChildProcess {
  return fork(modulePath, [], {
    execArgv: ['--import', tsLoaderRegistration],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
}
