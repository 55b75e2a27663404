// Where a batched token-bucket decision's Redis time goes: the batch script as the store sends it
// (captured from the wire), and variants of its text without one part each, run as 3,000 pipelined
// calls of 16 decisions over small bucket hashes; Redis's own µs per decision (`INFO commandstats`),
// three passes (the first writes new fields: `PTTL` and `HRANDFIELD` then run). Not a test: a
// profile before changing the scripts (docs/design/stores.md, "Where a batched decision's Redis
// time goes"). Starts its own redis-server.
//
//   node bench/lua-ablation.mjs
import Redis from 'ioredis';
import * as core from '@rl/core';
import { RedisStore } from '@rl/store-redis';
import { startRedis } from './lib/common.mjs';

const redis = await startRedis();
const port = redis.port;
const client = new Redis({ port });
const admin = new Redis({ port });
// Capture the batch script and one batch call's arguments.
let captured;
let lua;
const send = client.sendCommand.bind(client);
client.sendCommand = (cmd, stream) => {
  if ((cmd.name === 'evalsha' || cmd.name === 'eval') && captured === undefined && Number(cmd.args[1]) > 4)
    captured = cmd.args.slice(1);
  if (cmd.name === 'eval' && String(cmd.args[0]).includes('local function decide')) lua = String(cmd.args[0]);
  return send(cmd, stream);
};
await admin.script('FLUSH');
const store = new RedisStore({ client });
const limiter = core.createLimiter({
  store,
  algorithm: core.tokenBucket({ capacity: 100, refillRate: 100, interval: 86_400_000 }),
  timeout: false,
});
await limiter.consume('warm');
await Promise.all(Array.from({ length: 17 }, (_, i) => limiter.consume(`w${i}`)));
const [numkeys, ...rest] = captured;
const n = Number(numkeys);
console.log('batch of', rest[n], 'decisions;', n, 'keys');
// Make fresh argument sets: the same batch over other fields.
function argsFor(round) {
  const keys = rest.slice(0, n);
  const argv = rest.slice(n);
  // fields are the first argument after each op: rename them per round so states vary
  const out = [...argv];
  for (let i = 1; i < out.length; i++) if (out[i - 1] === 'c') out[i] = `f${round}:${i}`;
  return [n, ...keys, ...out];
}
async function measure(label, text, rounds = 3000) {
  const sha = await admin.script('LOAD', text);
  await admin.config('RESETSTAT');
  const pending = [];
  for (let r = 0; r < rounds; r++) pending.push(admin.evalsha(sha, ...argsFor(r % 8)));
  await Promise.all(pending);
  const info = await admin.info('commandstats');
  const m = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(info);
  const perDecision = Number(m[2]) / Number(m[1]) / Number(rest[n]);
  console.log(label.padEnd(50), perDecision.toFixed(3), 'us/decision');
}
const variants = { full: lua };
// No dead-field sampling.
variants['no HRANDFIELD sampling'] = lua.replace('if added == 1 and redis_now % 4 < 1 then', 'if false then');
// No PTTL/extend logic.
variants['no PTTL path'] = lua.replace('if redis_now + deadline_in + margin > kept then', 'if false then');
// Reply without packing.
variants['reply constant'] = lua.replace(
  /return struct\.pack\('<dddddd', allowed and 1 or 0, tokens, lag \+ full_in, retry_in, delay_in, now\)/,
  "return '012345678901234567890123456789012345678901234567'",
);
// The least: per decision one HGET and one HSET of its field (the same keys and arguments).
variants['minimal HGET+HSET loop'] =
  "local at, k0 = 2, 0 local replies = {} for d = 1, tonumber(ARGV[1]) do local v = redis.call('HGET', KEYS[k0 + 1], ARGV[at + 1]) redis.call('HSET', KEYS[k0 + 1], ARGV[at + 1], '012345678901234567890123') replies[d] = '012345678901234567890123456789012345678901234567' k0 = k0 + 1 at = at + 4 end return replies";
// The decide function called, doing only the two commands (the per-decision function call and pcall).
variants['pcall of a function doing HGET+HSET'] = lua.replace(
  /local EXPLICIT_NOW_MARGIN_MS[\s\S]*?\nend\nlocal pcall, tostring/,
  "local v = redis.call('HGET', KEYS[K0 + 1], ARGV[A0 + 1]) redis.call('HSET', KEYS[K0 + 1], ARGV[A0 + 1], '012345678901234567890123') return '012345678901234567890123456789012345678901234567'\nend\nlocal pcall, tostring",
);
for (let pass = 0; pass < 3; pass++) for (const [label, text] of Object.entries(variants)) await measure(label, text);
await client.quit();
await admin.quit();
await redis.stop();
