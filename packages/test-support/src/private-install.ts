/**
 * Installs a folder's own dependencies (its package.json and pnpm-lock.yaml, a folder that is no
 * workspace project) the first time a test needs them, once per clone: the tests that need large
 * programs (the runtime smoke suite's Bun, Deno and workerd) get them without every `pnpm install`
 * downloading them. See docs/design/testing.md, "The runtimes of the smoke suite".
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TEST_RUN_VARIABLE } from './leftovers.js';

/** The pnpm of the workspace (package.json's `packageManager`), run through npx as the README does. */
const PNPM = ['-y', 'pnpm@9.15.9'] as const;

/** Written in `node_modules` once an install succeeded: the hash of the manifest and lockfile it installed. */
const STAMP = '.rl-private-install';

/** The lock: a directory (its creation is atomic), holding the pid of the process that installs. */
const LOCK = '.rl-install-lock';

/** The reason the last install failed, and the test run it failed in (`RL_TEST_RUN`). */
const FAILED = '.rl-install-failed';

/** How long a lock without an owner file yet is someone's (between its mkdir and its write), ms. */
const OWNERLESS_GRACE_MS = 10_000;

export interface PrivateInstallOptions {
  /** The folder: its package.json and pnpm-lock.yaml; its node_modules is where they go. */
  dir: string;
  /** What is installed, for the reason given when it cannot be (`Bun, Deno and workerd`). */
  label: string;
  /** How long to wait for the install (another process's, then this one's), ms; default 600000. */
  timeoutMs?: number;
}

/**
 * Resolves once `dir`'s dependencies are installed, as its lockfile pins them (`pnpm install
 * --frozen-lockfile --ignore-workspace`): at once when an earlier install of the same package.json and
 * lockfile stands (the stamp), else after installing them. One process installs at a time (a lock
 * directory in `dir`; a lock whose process is gone is taken over): the others wait, then find the stamp,
 * or the failure of that install when it failed in the same test run (`RL_TEST_RUN`: one try a run).
 * Never rejects: resolves `undefined` when installed, or why not (pnpm's error line: no network, an
 * outdated lockfile, …), for a skip reason.
 */
export async function installPrivate(options: PrivateInstallOptions): Promise<string | undefined> {
  const { dir, label } = options;
  const deadline = Date.now() + (options.timeoutMs ?? 600_000);
  let wanted: string;
  try {
    wanted = installHash(dir);
  } catch (error) {
    return `${label} could not be installed: ${(error as Error).message}`;
  }
  const stamp = join(dir, 'node_modules', STAMP);
  const lock = join(dir, LOCK);
  while (true) {
    if (readStamp(stamp) === wanted) return undefined;
    if (takeLock(lock)) break;
    if (Date.now() > deadline) return `${label}: gave up waiting for the install another process holds (${lock})`;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  try {
    // Another process may have finished between the stamp's read and the lock.
    if (readStamp(stamp) === wanted) return undefined;
    // An install that failed in this test run is not tried again by its other files.
    const failed = readFailure(dir);
    if (failed !== undefined) return failed;
    rmSync(stamp, { force: true });
    const failure = await runInstall(dir, deadline - Date.now());
    if (failure !== undefined) {
      const reason = `${label} could not be installed into ${dir}: ${failure}`;
      writeFileSync(join(dir, FAILED), JSON.stringify({ run: process.env[TEST_RUN_VARIABLE], reason }));
      return reason;
    }
    rmSync(join(dir, FAILED), { force: true });
    writeFileSync(stamp, wanted);
    return undefined;
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** The hash of what an install installs: the manifest and the lockfile. */
function installHash(dir: string): string {
  const hash = createHash('sha256');
  for (const file of ['package.json', 'pnpm-lock.yaml']) hash.update(readFileSync(join(dir, file)));
  return hash.digest('hex');
}

function readStamp(stamp: string): string | undefined {
  try {
    return readFileSync(stamp, 'utf8');
  } catch {
    return undefined;
  }
}

/** Why the install failed earlier in this test run (the same `RL_TEST_RUN`), or undefined. */
function readFailure(dir: string): string | undefined {
  const run = process.env[TEST_RUN_VARIABLE];
  if (run === undefined) return undefined;
  try {
    const failed = JSON.parse(readFileSync(join(dir, FAILED), 'utf8')) as { run?: string; reason?: string };
    return failed.run === run ? failed.reason : undefined;
  } catch {
    return undefined;
  }
}

/** Takes the lock (true), or finds it held by a live process (false); a dead owner's lock is removed. */
function takeLock(lock: string): boolean {
  try {
    mkdirSync(lock);
    writeFileSync(join(lock, 'owner'), String(process.pid));
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  if (!lockAbandoned(lock)) return false;
  rmSync(lock, { recursive: true, force: true });
  return false;
}

function lockAbandoned(lock: string): boolean {
  const owner = join(lock, 'owner');
  if (!existsSync(owner)) {
    try {
      return Date.now() - statSync(lock).mtimeMs > OWNERLESS_GRACE_MS;
    } catch {
      return false; // released meanwhile
    }
  }
  const pid = Number(readStamp(owner));
  if (!Number.isInteger(pid) || pid <= 0) return true;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/** Runs pnpm's install of `dir`; resolves undefined when it succeeded, or what went wrong (the command, pnpm's error). */
function runInstall(dir: string, timeoutMs: number): Promise<string | undefined> {
  const args = [...PNPM, 'install', '--frozen-lockfile', '--ignore-workspace', '--dir', dir];
  const command = `npx ${args.join(' ')}`;
  return new Promise((resolve) => {
    const child = spawn('npx', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const collect = (chunk: Buffer): void => {
      output = (output + chunk.toString()).slice(-4_000);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    const timer = setTimeout(() => child.kill('SIGKILL'), Math.max(timeoutMs, 1_000));
    child.once('error', (error) => {
      clearTimeout(timer);
      resolve(`${command} did not start (${error.message})`);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) return resolve(undefined);
      // pnpm's error line (ERR_PNPM_…: no network, an outdated lockfile), npx's (`reason: connect
      // ECONNREFUSED`: no network to fetch pnpm), its first error line, else the last line.
      const lines = output
        .split('\n')
        .map((line) => line.trim())
        .filter(Boolean);
      const why =
        lines.find((line) => /ERR_PNPM|reason: /.test(line)) ??
        lines.find((line) => /error/i.test(line)) ??
        lines.at(-1) ??
        '';
      resolve(`${command} ${signal === null ? `exited ${code}` : 'timed out'}${why === '' ? '' : `: ${why}`}`);
    });
  });
}
