// Section 5: the flood case. One key sending far over its limit through the Redis store with the
// deny cache: Redis calls per 100 denied requests.
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { BENCH_DIR, runWorker, startRedis, verdict } from '../lib/common.mjs';
import { FLOOD_CONTENDERS, rlRedisStoreClass } from '../lib/redis-contenders.mjs';

const WORKER = path.join(BENCH_DIR, 'sections/redis-worker.mjs');
export const title = '5. Flood: one key far over its limit through Redis, with the deny cache';

export async function run({ quick, log }) {
  if (spawnSync('redis-server', ['--version']).status !== 0) return { skipped: 'redis-server is not on PATH' };
  if (!(await rlRedisStoreClass()))
    return { skipped: '@rl/store-redis exports no RedisStore in its build yet (the Redis store has not landed)' };
  const redis = await startRedis({ cpu: 0 });
  try {
    const n = quick ? 5_000 : 20_000;
    const rows = [];
    const raw = {};
    const targets = [];
    for (const name of Object.keys(FLOOD_CONTENDERS)) {
      const r = await runWorker(WORKER, ['flood', name, String(redis.port), String(n), '64'], { cpu: 1 });
      raw[name] = r;
      log(`  ${name}: ${r.callsPer100Denied.toFixed(3)} Redis calls per 100 denied`);
      rows.push([
        name,
        r.requests,
        r.allowed,
        r.denied,
        r.sent,
        r.callsPer100Denied,
        r.allCallsPer100Denied,
        r.opsPerSec,
        JSON.stringify(r.reasons),
      ]);
      if (!name.includes('denyCache: false')) {
        targets.push({
          target: `flood, ${name.split(' (')[0]}: < 1 Redis call per 100 denied`,
          value: r.callsPer100Denied,
          ok: r.callsPer100Denied < 1,
          verdict: verdict(r.callsPer100Denied < 1),
        });
      }
    }
    return {
      tables: [
        {
          caption: `${n.toLocaleString('en')} requests of one key, 64 in flight, limit 100 per day; calls/100 denied = (decisions Redis answered - admitted) / denied x 100 (an admitted request must reach Redis; a command can carry several decisions), all commands/100 denied = commands sent / denied x 100`,
          headers: [
            'contender',
            'requests',
            'admitted',
            'denied',
            'commands sent',
            'calls/100 denied',
            'all commands/100 denied',
            'decisions/s',
            'decided by',
          ],
          rows,
        },
      ],
      targets,
      raw,
    };
  } finally {
    await redis.stop();
  }
}
