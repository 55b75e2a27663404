// Where a batched decision's Redis time goes, measured inside Redis: the batch script of the token
// bucket and of the sliding log as this build's store sends them (captured from the wire), and
// variants of their text without one piece each, each run as one EVAL that decides D decisions
// (D keys: 1024 fields in 1024 bucket hashes; 512 logs) REPS times and reads Redis TIME around its own
// loop. No network, no client: µs per decision of Lua and the commands it calls. The minimum over
// the rounds is the figure (other work on the machine only adds); the median says how noisy it was.
// Not a test. Starts its own redis-server (core 0 with taskset).
//
//   node bench/lua-inside.mjs [rounds] [filter regexp]      (bench/README.md, issue 26 part 3)
//
// The variants are text replacements of the captured script: a replacement that no longer matches
// (the script changed) is reported and the variant skipped.
import Redis from 'ioredis';
import * as core from '@rl/core';
import { RedisStore } from '@rl/store-redis';
import { startRedis } from './lib/common.mjs';

const ROUNDS = Number(process.argv[2] ?? 9);
const only = process.argv[3] ? new RegExp(process.argv[3]) : null;
const redis = await startRedis({ cpu: 0 });
const admin = new Redis({ port: redis.port });

/** The batch script the store sends for `algorithm` (its first EVAL of a batch). */
async function captureBatchScript(algorithm) {
  const client = new Redis({ port: redis.port });
  let lua;
  const send = client.sendCommand.bind(client);
  client.sendCommand = (cmd, stream) => {
    if (cmd.name === 'eval' && String(cmd.args[0]).includes('local function decide')) lua = String(cmd.args[0]);
    return send(cmd, stream);
  };
  await admin.script('FLUSH');
  const limiter = core.createLimiter({
    store: new RedisStore({ client, prefix: 'capture:' }),
    algorithm,
    timeout: false,
  });
  await limiter.consume('warm');
  await Promise.all(Array.from({ length: 17 }, (_, i) => limiter.consume(`w${i}`)));
  client.disconnect();
  if (lua === undefined) throw new Error('no batch script captured');
  return lua;
}

/** The captured script's loop run REPS times inside one call, timed by Redis TIME: returns µs per decision. */
function timed(lua, reps) {
  const at = lua.indexOf('local pcall, tostring');
  const head = lua.slice(0, at);
  const loop = lua
    .slice(at)
    .replace(
      /(local replies, at, k0, batch_time = [^\n]*\n(?:batch_time = [^\n]*\n)?)/,
      `$1local t0 = redis.call('TIME')\nfor rep = 1, ${reps} do\n`,
    )
    .replace(
      'return replies',
      `at, k0 = 2, 0\nend\nlocal t1 = redis.call('TIME')\nreturn tostring(((t1[1] - t0[1]) * 1e6 + (t1[2] - t0[2])) / (${reps} * tonumber(ARGV[1])))`,
    );
  return { head, loop };
}

const replace = (text, from, to) => (text.includes(from) ? text.split(from).join(to) : null);
/** A variant: `from` replaced by `to` in the decision's text (the loop kept), or null when it no longer matches. */
const without = (from, to) => (head, loop) => {
  const text = replace(head, from, to);
  return text === null ? null : text + loop;
};

async function profile(title, lua, { keys, argv, reps, variants }) {
  const { head, loop } = timed(lua, reps);
  const all = { 'the batch script as sent': head + loop };
  for (const [name, make] of Object.entries(variants)) {
    const text = make(head, loop);
    if (text === null) console.log(`  (${name}: no longer matches the script; skipped)`);
    else all[name] = text;
  }
  const res = {};
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, text] of Object.entries(all)) {
      if (only && name !== 'the batch script as sent' && !only.test(name)) continue;
      await admin.flushall();
      // States in place first (the script as sent, once), then the variant, timed.
      await admin.eval(all['the batch script as sent'], keys.length, ...keys, ...argv);
      (res[name] ??= []).push(Number(await admin.eval(text, keys.length, ...keys, ...argv)));
    }
  }
  const base = Math.min(...res['the batch script as sent']);
  console.log(`\n${title} (µs per decision inside Redis; ${ROUNDS} rounds)`);
  console.log('| variant | min | median | min − the script as sent |');
  console.log('| --- | --- | --- | --- |');
  for (const [name, v] of Object.entries(res)) {
    v.sort((a, b) => a - b);
    console.log(
      `| ${name} | ${v[0].toFixed(2)} | ${v[v.length >> 1].toFixed(2)} | ${name === 'the batch script as sent' ? '' : (v[0] - base).toFixed(2)} |`,
    );
  }
}

// Token bucket: 1024 decisions on 1024 fields of 1024 bucket hashes, 40 times per call.
{
  const lua = await captureBatchScript(core.tokenBucket({ capacity: 100, refillRate: 100, interval: 86_400_000 }));
  const D = 1024;
  const keys = [];
  const argv = [String(D)];
  for (let i = 0; i < D; i++) {
    keys.push(`rl:{#${i.toString(16)}}:tb`);
    argv.push('c', `10.0.${((i * 97) >> 8) & 255}.${(i * 97) & 255}`, '', '');
  }
  const LOOP_ONLY = (body) => (_h, loop) =>
    `local WIDTH = { c = 2 }\nlocal function decide(K0, A0, OP, BATCH_TIME)\n${body}\nend\n${loop}`;
  const REPLY = "'012345678901234567890123456789012345678901234567'";
  await profile('Token bucket, batched', lua, {
    keys,
    argv,
    reps: 40,
    variants: {
      'the decision called directly (no pcall)': (h, l) =>
        replace(h + l, 'pcall(decide, k0, at, op, batch_time)', 'true, decide(k0, at, op, batch_time)'),
      'the reply a constant (no struct.pack of six doubles)': without(
        "local reply = struct.pack('<dddddd', i_allowed, i_remaining, i_reset, i_retry, i_delay, i_at)",
        `local reply = ${REPLY}`,
      ),
      'no unpack of the state read': without(
        "kept, stored_tokens, stored_last = struct.unpack('<ddd', raw)",
        'kept, stored_tokens, stored_last = 1e20, 50, now',
      ),
      "the caller's `now` checked only (prelude)": without(
        "else\n  now = tonumber(now)\nend\nif OP ~= 'r' and (now == nil or now ~= now or now == math.huge or now == -math.huge) then\n  return redis.error_reply('ERR rl: now is not a finite number of ms')\nend\n",
        "else\n  now = tonumber(now)\n  if now == nil or now ~= now or now == math.huge or now == -math.huge then\n    return redis.error_reply('ERR rl: now is not a finite number of ms')\n  end\nend\n",
      ),
      'the state packed in one call': (h, l) => {
        const t = replace(
          replace(h, "struct.pack('<d', kept) .. rest", "struct.pack('<ddd', kept, tokens, last)") ?? '',
          "local deadline, rest = last + full_in, struct.pack('<dd', tokens, last)",
          'local deadline = last + full_in',
        );
        return t ? t + l : null;
      },
      'TIME read as numbers once per batch': (h, l) => {
        const loop = replace(
          l,
          "redis.call('TIME')\nlocal t0",
          "redis.call('TIME')\nbatch_time = { tonumber(batch_time[1]), tonumber(batch_time[2]) }\nlocal t0",
        );
        return l.includes('batch_time = { tonumber') || loop === null ? null : h + loop;
      },
      'no idempotency blocks': (h, l) => {
        const t = h
          .replace(/local idem_raw = nil[\s\S]*?\nlocal raw = redis/, 'local raw = redis')
          .replace(
            /local i_at = now\nif idem_id ~= nil then[\s\S]*?\n {2}end\nend\nlocal reply/,
            'local i_at = now\nlocal reply',
          );
        return t === h ? null : t + l;
      },
      'no configuration declarations (literals)': (h, l) => {
        let t = h;
        const decl = {};
        for (const m of h.matchAll(/^local ((?:[A-Z_]+, )*[A-Z_]+) = ([-\d., e]+)$/gm)) {
          const names = m[1].split(', ');
          const values = m[2].split(', ');
          names.forEach((n, i) => (decl[n] = values[i]));
          t = t.replace(m[0], '');
        }
        for (const [n, v] of Object.entries(decl)) t = t.replace(new RegExp(`\\b${n}\\b`, 'g'), `(${v})`);
        return t + l;
      },
      'no HSET (the state packed, not written)': (h, l) => {
        const t = h.replace(
          /local added = redis\.call\('HSET', bucket, field, ([^\n]*)\)\n/,
          'local added = 0 local _s = $1\n',
        );
        return t === h ? null : t + l;
      },
      "floor: a pcall'd function doing HGET and HSET": LOOP_ONLY(
        `local v = redis.call('HGET', KEYS[K0 + 1], ARGV[A0 + 1]) redis.call('HSET', KEYS[K0 + 1], ARGV[A0 + 1], '012345678901234567890123') return ${REPLY}`,
      ),
      'alone: one TIME per decision': LOOP_ONLY(`local t = redis.call('TIME') return ${REPLY}`),
      'alone: one HGET per decision': LOOP_ONLY(
        `local v = redis.call('HGET', KEYS[K0 + 1], ARGV[A0 + 1]) return ${REPLY}`,
      ),
      'alone: one PTTL per decision': LOOP_ONLY(`local v = redis.call('PTTL', KEYS[K0 + 1]) return ${REPLY}`),
      'alone: struct.pack of six doubles': LOOP_ONLY("return struct.pack('<dddddd', 1, 2.5, 3.25, 4, 5, A0 * 1.5)"),
      'alone: the loop and pcall, nothing else': LOOP_ONLY(`return ${REPLY}`),
    },
  });
}

// Sliding log: 512 logs (a key and its :sum each), 3 records each after the first call.
{
  const lua = await captureBatchScript(core.slidingWindowLog({ limit: 100, window: 86_400_000 }));
  const D = 512;
  const keys = [];
  const argv = [String(D)];
  for (let i = 0; i < D; i++) {
    keys.push(`rl:{k${i}}:swl`, `rl:{k${i}}:swl:sum`);
    argv.push('c', '', '');
  }
  await profile('Sliding log, batched (logs of 1 to 4 records)', lua, {
    keys,
    argv,
    reps: 3,
    variants: {
      "floor: LRANGE, RPUSH, PEXPIRE in a pcall'd function": (_h, loop) =>
        `local WIDTH = { c = 2 }\nlocal IDEM_KEYS = {}\nlocal function decide(K0, A0, OP, BATCH_TIME)\nlocal f = redis.call('LRANGE', KEYS[K0 + 1], 0, 7) redis.call('RPUSH', KEYS[K0 + 1], struct.pack('<dd', 1e13, 1)) redis.call('PEXPIRE', KEYS[K0 + 1], 86400000) return '012345678901234567890123456789012345678901234567'\nend\n${loop}`,
    },
  });
}
admin.disconnect();
await redis.stop();
