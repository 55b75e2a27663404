/**
 * A worker process of the nestjs/throttler#1303 test: its own Nest app (the platform it is told) on
 * the shared Redis, limited by the module's limit; on 'go' it fires its burst of concurrent requests
 * at its app and answers how many were admitted (200) and denied (429).
 */
import 'reflect-metadata';
import { Controller, Get } from '@nestjs/common';
import { Redis } from 'ioredis';
import { slidingWindowLog } from '@rl/core';
import { RedisStore } from '@rl/store-redis';
import { RateLimitModule } from '../../src/index.js';
import { startNestApp, type Platform } from './nest-app.js';

export interface BurstJob {
  readonly platform: Platform;
  readonly redisUrl: string;
  readonly redisPrefix: string;
  readonly limit: number;
  readonly requests: number;
}

export interface BurstResult {
  readonly admitted: number;
  readonly denied: number;
  /** Statuses other than 200 and 429 (none expected). */
  readonly other: number[];
}

@Controller()
class PingController {
  @Get('ping')
  ping() {
    return { ok: true };
  }
}

process.on('message', (message: { job?: BurstJob }) => {
  if (message.job !== undefined) void run(message.job);
});
process.send!({ started: true });

async function run(job: BurstJob): Promise<void> {
  try {
    const client = new Redis(job.redisUrl);
    const store = new RedisStore({ client, prefix: job.redisPrefix });
    // One client (one key) hammering one limit: every request of both processes counts against the same 100.
    const app = await startNestApp(job.platform, {
      imports: [
        RateLimitModule.forRoot({
          algorithm: slidingWindowLog({ limit: job.limit, window: '1h' }),
          store,
          prefix: 'issue-1303',
          key: () => 'client',
          timeout: '10s',
          global: true,
        }),
      ],
      controllers: [PingController],
    });
    // Warm the connection and the app (one script load) outside the burst: a peek-like request would charge, so connect only.
    await client.ping();
    process.send!({ ready: true });
    await new Promise<void>((resolve) => process.once('message', (m) => m === 'go' && resolve()));
    const responses = await Promise.all(Array.from({ length: job.requests }, () => app.request('/ping')));
    const statuses = responses.map((r) => r.status);
    const result: BurstResult = {
      admitted: statuses.filter((s) => s === 200).length,
      denied: statuses.filter((s) => s === 429).length,
      other: statuses.filter((s) => s !== 200 && s !== 429),
    };
    await app.close();
    client.disconnect();
    process.send!({ result });
  } catch (error) {
    process.send!({ error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  }
}
