// One Redis contender in a fresh process. Modes:
//   ops <contender> <port> <inflight> <warmMs> <runMs>  decisions/s with <inflight> calls in flight, and round trips per decision
//   mem <contender> <port> <n>                           Redis bytes per key after <n> distinct keys
import Redis from 'ioredis';
import { REDIS_CONTENDERS, FLOOD_CONTENDERS } from '../lib/redis-contenders.mjs';
import { ipKey, report } from '../lib/common.mjs';

const [mode, name, port] = process.argv.slice(2, 5);
// Filling memory uses ioredis auto-pipelining (many commands per write) so a million keys take seconds.
const client = new Redis({ host: '127.0.0.1', port: Number(port), enableAutoPipelining: mode === 'mem' });
const admin = new Redis({ host: '127.0.0.1', port: Number(port) });
let c;
try {
  c = await (REDIS_CONTENDERS[name] ?? FLOOD_CONTENDERS[name])(client);
} catch (error) {
  if (String(error.message).startsWith('SKIP')) {
    report({ name, skipped: error.message.slice(5) });
    process.exit(0);
  }
  throw error;
}
const call = c.call;
// Round trips: commands this client sends (a script's inner commands are not round trips).
let sent = 0;
const sendCommand = client.sendCommand.bind(client);
client.sendCommand = (command, stream) => {
  sent++;
  return sendCommand(command, stream);
};
const storeErrors = {};
c.limiter?.on('storeError', (e) => {
  const k = `${e.reason}: ${e.error.message}`.slice(0, 120);
  storeErrors[k] = (storeErrors[k] ?? 0) + 1;
});

async function commandCalls() {
  const info = await admin.info('commandstats');
  let total = 0;
  // µs Redis spent running scripts (EVALSHA and EVAL, their inner commands included).
  let scriptUs = 0;
  const by = {};
  for (const m of info.matchAll(/cmdstat_([a-z|_-]+):calls=(\d+),usec=(\d+)/g)) {
    if (['info', 'config', 'flushall', 'dbsize', 'ping', 'client', 'hello', 'memory'].includes(m[1])) continue;
    by[m[1]] = Number(m[2]);
    total += Number(m[2]);
    if (m[1] === 'evalsha' || m[1] === 'eval') scriptUs += Number(m[3]);
  }
  return { total, by, scriptUs };
}

/** CPU time redis-server has used so far, in µs (`INFO cpu`: user and system, the main thread's and the rest). */
async function redisCpuUs() {
  const info = await admin.info('cpu');
  const read = (name) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  return (read('used_cpu_user') + read('used_cpu_sys')) * 1e6;
}

if (mode === 'ops') {
  const [inflight, warmMs, runMs] = process.argv.slice(5, 8).map(Number);
  const N = 100_000;
  let i = 0;
  let stop = 0;
  let ops = 0;
  const reasons = {};
  async function lane() {
    while (performance.now() < stop) {
      const d = await call(ipKey(i++ % N));
      ops++;
      if (d && d.reason) reasons[d.reason] = (reasons[d.reason] ?? 0) + 1;
    }
  }
  const runLanes = async (ms) => {
    stop = performance.now() + ms;
    await Promise.all(Array.from({ length: inflight }, lane));
  };
  await runLanes(warmMs);
  await admin.config('RESETSTAT');
  ops = 0;
  sent = 0;
  for (const k of Object.keys(reasons)) delete reasons[k];
  const redisCpu0 = await redisCpuUs();
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  await runLanes(runMs);
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const redisCpu = (await redisCpuUs()) - redisCpu0;
  const calls = await commandCalls();
  report({
    name,
    inflight,
    opsPerSec: (ops / ms) * 1000,
    roundTrips: sent / ops,
    redisCommandsPerOp: calls.total / ops,
    scriptCallsPerOp: ((calls.by.evalsha ?? 0) + (calls.by.eval ?? 0)) / ops,
    redisUsPerOp: redisCpu / ops,
    scriptUsPerOp: calls.scriptUs / ops,
    commands: calls.by,
    reasons,
    storeErrors,
    clientCpuUsPerOp: (cpu.user + cpu.system) / ops,
  });
} else if (mode === 'flood') {
  // One key far over its limit: <n> requests, <inflight> at a time; Redis calls per 100 denied.
  const [n, inflight] = process.argv.slice(5, 7).map(Number);
  await admin.flushall();
  await call('warm-up');
  await admin.config('RESETSTAT');
  sent = 0;
  let denied = 0;
  let done = 0;
  const reasons = {};
  const t0 = performance.now();
  async function lane() {
    while (done < n) {
      done++;
      const d = await call('203.0.113.7');
      if (!d.allowed) denied++;
      const r = d.reason ?? 'store';
      reasons[r] = (reasons[r] ?? 0) + 1;
    }
  }
  await Promise.all(Array.from({ length: inflight }, lane));
  const ms = performance.now() - t0;
  const calls = await commandCalls();
  // Admitted requests must reach Redis; the decisions Redis made for denied ones are the rest. With
  // batching one command carries several decisions, so they are counted as decisions the store
  // answered (not the deny cache), not as commands sent.
  const allowed = n - denied;
  const deniedByRedis = (reasons.store ?? 0) - allowed;
  report({
    name,
    requests: n,
    denied,
    allowed,
    sent,
    evals: (calls.by.evalsha ?? 0) + (calls.by.eval ?? 0),
    callsPer100Denied: (100 * deniedByRedis) / denied,
    allCallsPer100Denied: (100 * sent) / denied,
    reasons,
    opsPerSec: (n / ms) * 1000,
  });
} else if (mode === 'mem') {
  const n = Number(process.argv[5]);
  await admin.flushall();
  const memory = async () => Number((await admin.info('memory')).match(/used_memory:(\d+)/)[1]);
  // Warm up the scripts on a key outside the set (FLUSHALL keeps them), then measure.
  await call('warm-up');
  await admin.flushall();
  const before = await memory();
  const dbBefore = await admin.dbsize();
  const WINDOW = 1024;
  let next = 0;
  async function lane() {
    while (next < n) await call(ipKey(next++));
  }
  await Promise.all(Array.from({ length: WINDOW }, lane));
  const after = await memory();
  const keys = (await admin.dbsize()) - dbBefore;
  await admin.flushall();
  report({ name, keys: n, bytesPerKey: (after - before) / n, redisKeysPerKey: keys / n });
}
c.limiter?.store?.close?.();
client.disconnect();
admin.disconnect();
process.exit(0);
