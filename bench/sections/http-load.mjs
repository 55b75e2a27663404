// The load generator of section 4 (autocannon), run in its own process on its own core.
// argv: <port> <connections> <warmSeconds> <seconds> <serverPid>. Reports requests/s, latency,
// status counts and the server's CPU time during the measured run (from /proc/<pid>/stat).
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import { report } from '../lib/common.mjs';

const [port, connections, warm, seconds, pid] = process.argv.slice(2).map(Number);
const url = `http://127.0.0.1:${port}/`;
const TICK_US = 1e6 / 100; // USER_HZ

function cpuMicros() {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_US; // utime + stime
}

const run = (opts) => new Promise((resolve, reject) => autocannon({ url, connections, pipelining: 1, ...opts }, (err, res) => (err ? reject(err) : resolve(res))));

// Warm-up: a fixed number of requests (the JIT needs requests, not seconds), bounded in time.
if (warm > 0) await run({ amount: 3000, duration: warm * 2 });
const cpu0 = cpuMicros();
const r = await run({ duration: seconds });
const cpu = cpuMicros() - cpu0;
const total = r.requests.total;
report({
  rps: r.requests.average,
  total,
  p50: r.latency.p50,
  p99: r.latency.p99,
  status2xx: r['2xx'],
  non2xx: r.non2xx,
  errors: r.errors + r.timeouts,
  serverCpuUsPerReq: cpu / total,
});
