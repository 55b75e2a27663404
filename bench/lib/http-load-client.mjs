// The client side of section 4's load generator (sections/http-load.mjs), shared by bench/http-ab.mjs.
import path from 'node:path';
import { spawn } from 'node:child_process';
import { BENCH_DIR, pinned } from './common.mjs';

const LOAD = path.join(BENCH_DIR, 'sections/http-load.mjs');

/** The persistent load generator (http-load.mjs) on `cpu`: `measure(command)` resolves with its answer. */
export function startLoad(cpu) {
  const [cmd, argv] = pinned(cpu, process.execPath, [LOAD]);
  const child = spawn(cmd, argv, { stdio: ['pipe', 'pipe', 'pipe'] });
  const waiting = [];
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  child.stdout.on('data', (d) => {
    out += d;
    let nl;
    while ((nl = out.indexOf('\n')) >= 0) {
      const line = out.slice(0, nl);
      out = out.slice(nl + 1);
      if (line.startsWith('RESULT ')) waiting.shift()?.resolve(JSON.parse(line.slice(7)));
    }
  });
  child.on('exit', (code) => {
    for (const w of waiting.splice(0))
      w.reject(new Error(`http-load.mjs exited ${code}: ${err.trim().split('\n').slice(-5).join('\n')}`));
  });
  return {
    measure: (command) =>
      new Promise((resolve, reject) => {
        waiting.push({ resolve: (r) => (r.error ? reject(new Error(r.error)) : resolve(r)), reject });
        child.stdin.write(JSON.stringify(command) + '\n');
      }),
    stop: () => {
      child.stdin.end();
      return new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
    },
  };
}
