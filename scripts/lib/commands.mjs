// Commands of the check scripts (pack-test, doc-test): run one, blocking or not, and find pnpm.
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'));

/** Runs `command` to its end: `{ status, stdout, stderr }`, status -1 (and the error in stderr) when it could not start. */
export function run(command, commandArgs, options = {}) {
  const result = spawnSync(command, commandArgs, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, ...options });
  return {
    status: result.error ? -1 : result.status,
    stdout: result.stdout ?? '',
    stderr: (result.stderr ?? '') + (result.error ? String(result.error) : ''),
  };
}

/**
 * Like {@link run}, without blocking (several commands run side by side): resolves `{ status, stdout,
 * stderr, timedOut }`. With `timeoutMs`, the command is killed (SIGKILL) after that many ms.
 */
export function runAsync(command, commandArgs, { timeoutMs, ...options } = {}) {
  return new Promise((resolvePromise) => {
    const child = spawn(command, commandArgs, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const timer = timeoutMs ? setTimeout(() => ((timedOut = true), child.kill('SIGKILL')), timeoutMs) : undefined;
    child.on('error', (error) => {
      clearTimeout(timer);
      resolvePromise({ status: -1, stdout, stderr: stderr + String(error), timedOut });
    });
    child.on('close', (status) => {
      clearTimeout(timer);
      resolvePromise({ status, stdout, stderr, timedOut });
    });
  });
}

/** How to run pnpm: `PNPM` (a command line), else pnpm on PATH, else `npx -y <packageManager of root>`. */
export function pnpmCommand(root) {
  if (process.env.PNPM) {
    const [command, ...rest] = process.env.PNPM.split(' ');
    return [command, rest];
  }
  if (run('pnpm', ['--version']).status === 0) return ['pnpm', []];
  const version = (readJson(join(root, 'package.json')).packageManager ?? 'pnpm@9').replace(/\+.*$/, '');
  return ['npx', ['-y', version]];
}
