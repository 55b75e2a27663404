// Where the heap bytes of one HTTP server's requests go: V8's sampling heap profiler (collected objects
// included) over `measured` requests after `warm` ones, bytes per request by allocating frame (the
// frame at the top of the JS stack: what the compiler inlined is counted in the function it was
// inlined into), with the sizes of the objects sampled. The frames of packages/ by default; `all` for
// every frame. A sample, not a count: bench/http-alloc.mjs counts. Usage (after a build):
// node bench/http-alloc-profile.mjs <framework> <variant> [warm=20000] [measured=40000] [packages|all]
import path from 'node:path';
import os from 'node:os';
import { spawn } from 'node:child_process';
import { readFileSync, unlinkSync } from 'node:fs';
import { BENCH_DIR } from './lib/common.mjs';
import { startLoad } from './lib/http-load-client.mjs';
import { bytesByFrame } from './lib/heap-profile.mjs';

const [framework, variant, warm = '20000', measured = '40000', which = 'packages'] = process.argv.slice(2);
if (framework === undefined || variant === undefined) {
  console.error('usage: node bench/http-alloc-profile.mjs <framework> <variant> [warm] [measured] [packages|all]');
  process.exit(2);
}
const INTERVAL = 64;
const file = path.join(os.tmpdir(), `rl-heap-${framework}-${variant}-${process.pid}.heapprofile`);
const server = spawn(
  process.execPath,
  [
    // `RL_V8_FLAGS` (e.g. --no-turbo-allocation-folding: each object sampled alone, not folded with its neighbours).
    ...(process.env.RL_V8_FLAGS ?? '').split(' ').filter(Boolean),
    '--import',
    path.join(BENCH_DIR, 'lib/heap-sampling.mjs'),
    path.join(BENCH_DIR, 'sections/http-server.mjs'),
    framework,
    variant,
    'allow',
    '0',
    '0',
  ],
  {
    env: { ...process.env, RL_HEAP_PROFILE: file, RL_HEAP_SAMPLING_INTERVAL: String(INTERVAL) },
    stdio: ['ignore', 'pipe', 'inherit'],
  },
);
let output = '';
server.stdout.on('data', (d) => (output += d));
const waitFor = (pattern) =>
  new Promise((resolve) => {
    const check = () => {
      const m = output.match(pattern);
      if (m === null) return;
      server.stdout.off('data', check);
      resolve(m);
    };
    server.stdout.on('data', check);
    check();
  });
const [, port] = await waitFor(/READY (\d+)/);
const load = startLoad(undefined);
const command = { port: Number(port), pid: server.pid, connections: 64, warmRequests: 0 };
let requests;
try {
  await load.measure({ ...command, amount: Number(warm) });
  server.kill('SIGUSR2');
  await waitFor(/PROFILE_STARTED/);
  requests = (await load.measure({ ...command, amount: Number(measured) })).total;
  server.kill('SIGUSR2');
  await waitFor(/PROFILE_WRITTEN/);
} finally {
  await load.stop();
  server.kill('SIGTERM');
}

const profile = JSON.parse(readFileSync(file, 'utf8'));
unlinkSync(file);
const rows = bytesByFrame(profile, { interval: INTERVAL, operations: requests, which });
console.log(
  `${framework} ${variant}: ${requests} requests profiled after ${warm}; bytes per request by allocating frame`,
);
for (const [name, bytes, parts] of rows.filter((r) => r[1] >= 1))
  console.log(`${bytes.toFixed(0).padStart(7)}  ${name}  (${parts})`);
