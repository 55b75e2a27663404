import { fileURLToPath } from 'node:url';

/**
 * The path to give `node --import` (or `fork(…, { execArgv: ['--import', tsLoaderRegistration] })`) so
 * that a child process runs the workspace's TypeScript sources, resolving `@rl/*` like vitest does.
 */
export const tsLoaderRegistration = fileURLToPath(new URL('../register-ts.mjs', import.meta.url));
