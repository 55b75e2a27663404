// The open-loop load generator of the burst experiment. LOAD_CONFIG (JSON): `{ port, phases: [{ rate,
// seconds }], startAt }` (startAt: epoch ms). Request i of a phase is *scheduled* at i / rate seconds
// into it, whatever happened to earlier requests, and its latency is measured from that scheduled
// time to the end of its response: a stalled gateway shows as latency, not as fewer requests sent (no
// coordinated omission). Reports `{ sched, latency, status }` arrays, times in ms from startAt.
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { report } from '../lib/common.mjs';

const { port, phases, startAt } = JSON.parse(process.env.LOAD_CONFIG);
const now = () => performance.timeOrigin + performance.now();
const REQUEST_TIMEOUT_MS = 10_000;

const schedule = [];
let offset = 0;
for (const { rate, seconds } of phases) {
  const n = Math.round(rate * seconds);
  for (let i = 0; i < n; i++) schedule.push(offset + (i * 1000) / rate);
  offset += seconds * 1000;
}
const n = schedule.length;
const latency = new Float64Array(n).fill(NaN);
const status = new Int16Array(n);
const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
let done = 0;
let finish;
const finished = new Promise((r) => (finish = r));

function send(i) {
  const scheduled = startAt + schedule[i];
  const end = (code) => {
    if (status[i] !== 0) return;
    status[i] = code;
    latency[i] = now() - scheduled;
    if (++done === n) finish();
  };
  const req = http.request(
    { host: '127.0.0.1', port, path: '/', method: 'GET', agent, timeout: REQUEST_TIMEOUT_MS },
    (res) => {
      res.resume();
      res.on('end', () => end(res.statusCode));
      res.on('error', () => end(-1));
    },
  );
  req.on('timeout', () => req.destroy(new Error('timeout')));
  req.on('error', () => end(-1));
  req.end();
}

// A 1 ms timer loop sends every request whose time has come; timer slack is part of the latency.
let next = 0;
await new Promise((r) => setTimeout(r, Math.max(0, startAt - now())));
await new Promise((resolve) => {
  const tick = () => {
    const t = now() - startAt;
    while (next < n && schedule[next] <= t) send(next++);
    if (next < n) setTimeout(tick, 1);
    else resolve();
  };
  tick();
});
// Every response, or at most 1 s past the last request's timeout. The timer is cleared: left pending,
// it kept the process alive 11 s after the last response, half the time of a --quick configuration.
let giveUp;
await Promise.race([finished, new Promise((r) => (giveUp = setTimeout(r, REQUEST_TIMEOUT_MS + 1000)))]);
clearTimeout(giveUp);
agent.destroy();
report({
  sched: schedule.map((x) => Math.round(x * 10) / 10),
  latency: Array.from(latency, (x) => Math.round(x * 100) / 100),
  status: Array.from(status),
});
