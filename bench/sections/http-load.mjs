// The load generator of section 4 (autocannon), one process for the whole section, on its own core.
// It reads one JSON command per line on stdin, { port, pid, connections, warmRequests, seconds }, and
// answers each with a `RESULT ` line: requests/s, latency, status counts and the server's CPU time
// during the measured run. `seconds: 0` only warms the server up; `amount` sends that many requests
// instead of running for `seconds`.
import { readFileSync, readdirSync } from 'node:fs';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import { report } from '../lib/common.mjs';

const TICK_US = 1e6 / 100; // USER_HZ

/**
 * CPU time of every thread of `pid` in µs: the sum of `/proc/<pid>/task/<tid>/schedstat`'s run time
 * (ns resolution; it counts the GC and compiler threads too, as utime + stime does), or utime + stime
 * from `/proc/<pid>/stat` (10 ms ticks) where schedstat is missing.
 */
function cpuMicros(pid) {
  try {
    let ns = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        // A thread that ended between the listing and the read: its time is lost from both readings alike.
      }
    }
    if (ns > 0) return ns / 1000;
  } catch {
    // No schedstat: fall through to the ticks.
  }
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_US;
}

const run = (opts) =>
  new Promise((resolve, reject) =>
    autocannon({ pipelining: 1, ...opts }, (err, res) => (err ? reject(err) : resolve(res))),
  );

/** One autocannon run against `port` while the server's CPU time is read around it. */
async function measure({ port, pid, connections, warmRequests, seconds, amount }) {
  const url = `http://127.0.0.1:${port}/`;
  // Warm-up: a number of requests (the JIT needs requests, not seconds), bounded in time.
  if (warmRequests > 0) await run({ url, connections, amount: warmRequests, duration: 3 });
  if (seconds === 0 && amount === undefined) return { warmed: true };
  const cpu0 = cpuMicros(pid);
  const r = await run(amount === undefined ? { url, connections, duration: seconds } : { url, connections, amount });
  const cpu = cpuMicros(pid) - cpu0;
  const total = r.requests.total;
  return {
    rps: total / r.duration,
    total,
    p50: r.latency.p50,
    p99: r.latency.p99,
    status2xx: r['2xx'],
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
    serverCpuUsPerReq: cpu / total,
  };
}

for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === '') continue;
  try {
    report(await measure(JSON.parse(line)));
  } catch (error) {
    report({ error: String(error?.message ?? error) });
  }
}
