// Shared helpers of the benchmark suite: stats, tables, child processes, ports, pinning, Redis.
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

export const BENCH_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const ROOT_DIR = path.resolve(BENCH_DIR, '..');

export function median(values) {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

/** The i-th key of the shared key set: IPv4-like strings, the same for every contender. */
export function ipKey(i) {
  return `10.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`;
}

export function fmt(x, digits = 2) {
  if (x === undefined || x === null || Number.isNaN(x)) return '-';
  if (typeof x === 'string') return x;
  const a = Math.abs(x);
  if (a >= 1e6) return (x / 1e6).toFixed(2) + 'M';
  if (a >= 1e4) return (x / 1e3).toFixed(1) + 'k';
  if (a >= 100) return x.toFixed(0);
  return x.toFixed(digits);
}

/** A markdown table (also readable in a terminal). `rows` are arrays of cells. */
export function table(headers, rows) {
  const cells = [headers, ...rows].map((r) => r.map((c) => (typeof c === 'number' ? fmt(c) : String(c ?? '-'))));
  const widths = headers.map((_, i) => Math.max(3, ...cells.map((r) => (r[i] ?? '').length)));
  const line = (r) => '| ' + r.map((c, i) => (c ?? '').padEnd(widths[i])).join(' | ') + ' |';
  return [line(cells[0]), '| ' + widths.map((w) => '-'.repeat(w)).join(' | ') + ' |', ...cells.slice(1).map(line)].join(
    '\n',
  );
}

export const verdict = (ok) => (ok === undefined ? '-' : ok ? 'PASS' : 'FAIL');

export function hasTaskset() {
  try {
    execFileSync('taskset', ['-c', '0', 'true'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
const TASKSET = hasTaskset();
export const CPUS = (await import('node:os')).cpus().length;

/** Command and arguments, prefixed with `taskset -c <cpu>` when taskset exists and the machine has that core. */
export function pinned(cpu, cmd, args) {
  if (TASKSET && cpu !== undefined && cpu < CPUS) return ['taskset', ['-c', String(cpu), cmd, ...args]];
  return [cmd, args];
}

/**
 * Runs a bench worker script in a fresh node process; the worker prints one JSON line prefixed
 * with `RESULT ` on stdout. Returns the parsed value.
 */
export function runWorker(script, args = [], { nodeArgs = [], cpu, timeoutMs = 120_000, env } = {}) {
  const [cmd, argv] = pinned(cpu, process.execPath, [...nodeArgs, script, ...args]);
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    let out = '';
    let err = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('close', (code) => {
      clearTimeout(timer);
      const line = out.split('\n').find((l) => l.startsWith('RESULT '));
      if (code === 0 && line) resolve(JSON.parse(line.slice(7)));
      else
        reject(
          new Error(
            `${path.basename(script)} ${args.join(' ')} exited ${code}: ${err.trim().split('\n').slice(-6).join('\n')}`,
          ),
        );
    });
  });
}

export function report(value) {
  process.stdout.write('RESULT ' + JSON.stringify(value) + '\n');
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Whether a built workspace package exports `name` (a package under construction exports nothing). */
export async function builtExport(pkg, name) {
  try {
    const mod = await import(pkg);
    return typeof mod[name] === 'function' ? mod[name] : undefined;
  } catch {
    return undefined;
  }
}

/** Starts a private redis-server on 127.0.0.1 (never 6379), no persistence, pinned to `cpu`. */
export async function startRedis({ cpu = 0 } = {}) {
  if (spawnSync('redis-server', ['--version']).status !== 0) throw new Error('redis-server is not on PATH');
  let port = await freePort();
  if (port === 6379) port = await freePort();
  const [cmd, argv] = pinned(cpu, 'redis-server', [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--protected-mode',
    'yes',
    '--loglevel',
    'warning',
  ]);
  const child = spawn(cmd, argv, { stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    await sleep(50);
    const ping = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), 'PING'], { encoding: 'utf8' });
    if (ping.stdout?.trim() === 'PONG') {
      return {
        port,
        pid: child.pid,
        async stop() {
          if (child.exitCode !== null) return;
          const done = new Promise((r) => child.once('exit', r));
          child.kill('SIGTERM');
          await Promise.race([done, sleep(2000)]);
          if (child.exitCode === null) child.kill('SIGKILL');
        },
      };
    }
  }
  child.kill('SIGKILL');
  throw new Error('redis-server did not start');
}

/**
 * Spawns a long-running child (a server); resolves once it prints `READY`, with `output()` (all it
 * printed so far) and `errors()`. `stdin: 'pipe'` to write to it.
 */
export function startChild(cmd, argv, { env, readyTimeoutMs = 15_000, stdin = 'ignore' } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { stdio: [stdin, 'pipe', 'pipe'], env: { ...process.env, ...env } });
    let out = '';
    let err = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server not ready: ${err.trim().split('\n').slice(-5).join('\n')}`));
    }, readyTimeoutMs);
    child.stderr.on('data', (d) => (err += d));
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/READY(.*)\n/);
      if (m && timer) {
        clearTimeout(timer);
        resolve({ child, info: m[1].trim(), output: () => out, errors: () => err });
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited ${code}: ${err.trim().split('\n').slice(-5).join('\n')}`));
    });
  });
}
