/**
 * A real Redis Sentinel deployment for tests: a master, one replica and one (or three) sentinels,
 * all started from the `redis-server` binary (`redis-server sentinel.conf --sentinel` for a
 * sentinel) on free ports of 127.0.0.1, each in a temporary directory, without persistence. Always
 * cleaned up: by `stop()`, and by a process exit hook when a test run dies before its `afterAll`.
 *
 * Never an external deployment: the tests fail the master over, which nobody's data should go through.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cli, redisServerArgs, sleep, startRedisProcess } from './redis-server.js';

export interface RedisNodeAddress {
  host: string;
  port: number;
}

export interface RedisSentinelHandle {
  /** The master group's name (`sentinel monitor <name> …`): what clients pass as `name`. */
  name: string;
  /** The sentinels, what clients are given (ioredis `sentinels`, node-redis `sentinelRootNodes`). */
  sentinels: RedisNodeAddress[];
  /** The master when the deployment started. */
  master: RedisNodeAddress;
  /** Its replica when the deployment started: the node a failover promotes. */
  replica: RedisNodeAddress;
  /**
   * `SENTINEL FAILOVER <name>` on the first sentinel, then waits (at most 10 s) until every sentinel
   * names the replica as the master and the replica answers `ROLE` as a master; resolves to the new
   * master. Once per deployment: the old master stays a master until a sentinel turns it into a
   * replica (about 10 s later, as Sentinel does), so a second failover would find no replica.
   */
  failover(): Promise<RedisNodeAddress>;
  /** Kills every process (SIGKILL) and removes their directories. */
  stop(): Promise<void>;
}

export interface RedisSentinelOptions {
  /** Master group name; default `rl-master`. */
  name?: string;
  /** 1 (default, quorum 1) or 3 sentinels (quorum 2; ready once each knows the two others). */
  sentinels?: 1 | 3;
}

const HOST = '127.0.0.1';
const READY_TIMEOUT_MS = 10_000;

/**
 * Starts the deployment and resolves once the replica is in sync with the master and every sentinel
 * lists the replica as healthy (so that `failover()` has a replica to promote).
 */
export async function startRedisSentinel(options: RedisSentinelOptions = {}): Promise<RedisSentinelHandle> {
  const name = options.name ?? 'rl-master';
  const count = options.sentinels ?? 1;
  const stops: (() => Promise<void>)[] = [];
  /** Starts a node (see `startRedisProcess`); its stop is one of the deployment's. */
  const startNode = async (args: (port: number, dir: string) => string[]): Promise<number> => {
    const { port, stop: stopNode } = await startRedisProcess(args);
    stops.push(stopNode);
    return port;
  };
  const stop = async () => {
    await Promise.all(stops.splice(0).map((stopOne) => stopOne()));
  };
  try {
    // No delay before a full sync (the default waits 5 s for more replicas): the replica, and the old
    // master after a failover, are in sync at once.
    const dataNode = (port: number, dir: string) => redisServerArgs(port, dir, ['--repl-diskless-sync-delay', '0']);
    const masterPort = await startNode(dataNode);
    const replicaPort = await startNode((port, dir) => [
      ...dataNode(port, dir),
      '--replicaof',
      HOST,
      String(masterPort),
    ]);
    const sentinelPorts: number[] = [];
    for (let i = 0; i < count; i++) {
      sentinelPorts.push(
        await startNode((port, dir) => {
          // A sentinel rewrites its configuration file (what it learns): it must be its own, writable.
          const file = join(dir, 'sentinel.conf');
          writeFileSync(
            file,
            [
              `port ${port}`,
              `bind ${HOST}`,
              `dir ${dir}`,
              `logfile ${join(dir, 'sentinel.log')}`,
              `sentinel monitor ${name} ${HOST} ${masterPort} ${count === 1 ? 1 : 2}`,
              `sentinel down-after-milliseconds ${name} 1000`,
              `sentinel failover-timeout ${name} 10000`,
              `sentinel parallel-syncs ${name} 1`,
              '',
            ].join('\n'),
          );
          return [file, '--sentinel'];
        }),
      );
    }
    await waitUntil(`the replica on port ${replicaPort} did not sync with its master`, () =>
      cli(replicaPort, ['INFO', 'replication']).includes('master_link_status:up'),
    );
    await waitUntil('the sentinels did not see a healthy replica', () =>
      sentinelPorts.every((port) => healthyReplica(port, name, replicaPort)),
    );
    if (count > 1) {
      await waitUntil('the sentinels did not discover one another', () =>
        sentinelPorts.every(
          (port) =>
            pairs(cli(port, ['SENTINEL', 'SENTINELS', name])).filter(([field]) => field === 'name').length ===
            count - 1,
        ),
      );
    }
    let failedOver = false;
    const failover = async (): Promise<RedisNodeAddress> => {
      if (failedOver)
        throw new Error(
          'startRedisSentinel: failover() runs once per deployment (the old master is not a replica yet)',
        );
      failedOver = true;
      const answer = cli(sentinelPorts[0]!, ['SENTINEL', 'FAILOVER', name]).trim();
      if (answer !== 'OK') throw new Error(`SENTINEL FAILOVER ${name} answered ${answer}`);
      await waitUntil(
        `the sentinels did not promote the replica on port ${replicaPort}`,
        () =>
          sentinelPorts.every(
            (port) =>
              cli(port, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name]).split('\n')[1]?.trim() === String(replicaPort),
          ) && cli(replicaPort, ['ROLE']).startsWith('master'),
      );
      return { host: HOST, port: replicaPort };
    };
    return {
      name,
      sentinels: sentinelPorts.map((port) => ({ host: HOST, port })),
      master: { host: HOST, port: masterPort },
      replica: { host: HOST, port: replicaPort },
      failover,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** True when the sentinel on `port` lists the replica on `replicaPort` with no flag but `slave` (not down, not disconnected). */
function healthyReplica(port: number, name: string, replicaPort: number): boolean {
  // One replica: its fields and values, in pairs, one per line (redis-cli without a terminal).
  const fields = new Map(pairs(cli(port, ['SENTINEL', 'REPLICAS', name])));
  return (
    fields.get('port') === String(replicaPort) &&
    fields.get('flags') === 'slave' &&
    fields.get('master-link-status') === 'ok'
  );
}

/** The lines of a redis-cli answer as `[field, value]` pairs. */
function pairs(output: string): [string, string][] {
  const lines = output.split('\n').map((line) => line.trim());
  const result: [string, string][] = [];
  for (let i = 0; i + 1 < lines.length; i += 2) result.push([lines[i]!, lines[i + 1]!]);
  return result;
}

async function waitUntil(failure: string, ready: () => boolean): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (!attempt(ready)) {
    if (Date.now() > deadline) throw new Error(`startRedisSentinel: ${failure} within ${READY_TIMEOUT_MS} ms`);
    await sleep(50);
  }
}

/** `ready()`, false when it throws (a redis-cli call that failed: a node still starting or switching). */
function attempt(ready: () => boolean): boolean {
  try {
    return ready();
  } catch {
    return false;
  }
}
