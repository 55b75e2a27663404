/**
 * Real Redis servers for tests: started from the `redis-server` binary on free ports of 127.0.0.1, in
 * temporary directories, and always cleaned up (by `stop()`, and by a process exit hook when a test run
 * dies before its `afterAll`). No mocks.
 *
 * `REDIS_URL` set: {@link startRedisServer} uses that server and starts nothing (its `stop()` does
 * nothing). `REDIS_CLUSTER_NODES` set (`host:port,host:port,…`): {@link startRedisCluster} uses that
 * cluster. Both are shared: tests use unique key prefixes. Both only with
 * `RL_TEST_REDIS_DISPOSABLE=1` (see {@link externalRedis}): the tests pause, flush and fill that
 * server, so an external one must be one nobody minds losing.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface RedisServerHandle {
  /** `redis://127.0.0.1:<port>` (or `REDIS_URL`). */
  url: string;
  port: number;
  /** True when the server comes from `REDIS_URL`: tests that stop or restart the server must skip. */
  external: boolean;
  /** Kills the server and removes its directory (does nothing for `REDIS_URL`). */
  stop(): Promise<void>;
}

export interface RedisClusterHandle {
  /** The masters, in the order their slot ranges follow (the first serves slots from 0). */
  nodes: { host: string; port: number }[];
  /** With `replicas: true`: the replica of each master, in the order of `nodes`; otherwise empty. */
  replicas: { host: string; port: number }[];
  /** True when the cluster comes from `REDIS_CLUSTER_NODES`: tests that kill a node must skip. */
  external: boolean;
  /** Kills one node (SIGKILL) of a cluster the harness started: a master that fails, for a failover. */
  kill(port: number): Promise<void>;
  stop(): Promise<void>;
}

export interface RedisClusterOptions {
  /**
   * A replica for each of the 3 masters (3 + 3 nodes), with `cluster-node-timeout` 500 ms (a killed
   * master's replica is promoted within a few seconds) and `cluster-require-full-coverage no` (the
   * other masters keep answering while a master is down, as in production setups that want that).
   */
  replicas?: boolean;
}

/** The variable that says the server of `REDIS_URL` / `REDIS_CLUSTER_NODES` is disposable. */
export const REDIS_DISPOSABLE_VARIABLE = 'RL_TEST_REDIS_DISPOSABLE';

/**
 * An error of the harness that says all there is to say in its message: its stack is that one line
 * (vitest prints no frames of the harness under it; the failing file and hook are named by vitest).
 */
function oneLine<E extends Error>(error: E): E {
  error.stack = `${error.name}: ${error.message}`;
  return error;
}

/** Thrown when a test would use an external Redis that nobody said is disposable. */
export class ExternalRedisRefusedError extends Error {
  /** Stable: `RL_TEST_REDIS_NOT_DISPOSABLE`. */
  readonly code = 'RL_TEST_REDIS_NOT_DISPOSABLE';
  /** The variable that names the server: `REDIS_URL` or `REDIS_CLUSTER_NODES`. */
  readonly variable: string;
  constructor(variable: string) {
    super(
      `${variable} is set, but this Redis test runs CLIENT PAUSE and SCRIPT FLUSH on that server and leaves keys on it: ` +
        `unset ${variable} (the test starts its own redis-server), or set ${REDIS_DISPOSABLE_VARIABLE}=1 if that server is disposable.`,
    );
    this.name = 'ExternalRedisRefusedError';
    this.variable = variable;
    oneLine(this);
  }
}

/** Thrown at once when `redis-server` or `redis-cli` is not on the PATH: a Redis test cannot start its server. */
export class RedisBinaryMissingError extends Error {
  /** Stable: `RL_TEST_REDIS_BINARY_MISSING`. */
  readonly code = 'RL_TEST_REDIS_BINARY_MISSING';
  /** `redis-server` or `redis-cli`. */
  readonly binary: string;
  constructor(binary: string, reason: string) {
    super(
      `${binary} is not on the PATH (${reason}): the Redis tests start their own servers from it. ` +
        'Install Redis 6.2 or later (Debian or Ubuntu: apt-get install redis-server; macOS: brew install redis), or run a disposable Redis and set REDIS_URL (and RL_TEST_REDIS_DISPOSABLE=1).',
    );
    this.name = 'RedisBinaryMissingError';
    this.binary = binary;
    oneLine(this);
  }
}

/**
 * The external Redis the tests may use: the value of `variable` (`REDIS_URL` or
 * `REDIS_CLUSTER_NODES`) in `env`, or `undefined` when it is unset or empty (the harness then starts
 * its own servers). Throws {@link ExternalRedisRefusedError} when it is set and
 * `RL_TEST_REDIS_DISPOSABLE` is not exactly `1`: the tests are destructive (they pause the server,
 * flush its script cache, kill and restart what they started) and write keys that outlive the run,
 * so they never touch a server that may hold a user's data.
 */
export function externalRedis(
  variable: 'REDIS_URL' | 'REDIS_CLUSTER_NODES',
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  const value = env[variable];
  if (value === undefined || value === '') return undefined;
  if (env[REDIS_DISPOSABLE_VARIABLE] !== '1') throw new ExternalRedisRefusedError(variable);
  return value;
}

/**
 * Throws {@link ExternalRedisRefusedError} when `REDIS_URL` or `REDIS_CLUSTER_NODES` is set without
 * the opt-in. Not called by the vitest config: the fixtures refuse in the files that start a Redis
 * only (a run of files that use no Redis is not stopped by a `REDIS_URL` set for something else).
 */
export function refuseNonDisposableRedis(env: NodeJS.ProcessEnv = process.env): void {
  externalRedis('REDIS_URL', env);
  externalRedis('REDIS_CLUSTER_NODES', env);
}

const HOST = '127.0.0.1';
const START_TIMEOUT_MS = 10_000;
const live = new Set<{ child: ChildProcess; dir: string }>();

process.once('exit', () => {
  for (const server of live) {
    server.child.kill('SIGKILL');
    rmSync(server.dir, { recursive: true, force: true });
  }
});

/**
 * Starts a `redis-server` on a free port (or on `options.port`, for a restart of a server that was
 * stopped), without persistence. Resolves once it answers PING.
 */
export async function startRedisServer(options: { port?: number } = {}): Promise<RedisServerHandle> {
  const external = externalRedis('REDIS_URL');
  if (external && options.port === undefined) {
    return { url: external, port: Number(new URL(external).port || 6379), external: true, stop: async () => {} };
  }
  const { port, stop } =
    options.port === undefined
      ? await startRedisProcess((free, dir) => redisServerArgs(free, dir))
      : { port: options.port, stop: await spawnRedis(options.port, []) };
  return { url: `redis://${HOST}:${port}`, port, external: false, stop };
}

/** The arguments of a data node on `port`: this host, no persistence, its files in `dir`, then `extra`. */
export function redisServerArgs(port: number, dir: string, extra: readonly string[] = []): string[] {
  return [
    '--port',
    String(port),
    '--bind',
    HOST,
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
    '--logfile',
    join(dir, 'redis.log'),
    ...extra,
  ];
}

/** Set once `redis-server` and `redis-cli` were found on the PATH. */
let binariesFound = false;

/**
 * Throws at once, naming what is missing and how to get it, when `redis-server` or `redis-cli` is not
 * on the PATH (`env.PATH`), instead of letting each Redis test file wait for its hook's timeout.
 */
export function requireRedisBinaries(env: NodeJS.ProcessEnv = process.env): void {
  if (binariesFound && env === process.env) return;
  for (const binary of ['redis-server', 'redis-cli']) {
    const found = spawnSync(binary, ['--version'], { encoding: 'utf8', env, timeout: 10_000 });
    if (found.error !== undefined || found.status !== 0) {
      throw new RedisBinaryMissingError(binary, found.error?.message ?? `exit code ${found.status}`);
    }
  }
  if (env === process.env) binariesFound = true;
}

/**
 * Starts one `redis-server` with the arguments `argsOf(port, dir)` gives, on a free port, with a new
 * temporary directory `dir` (removed at its stop, or when the process exits); resolves once it answers
 * PING. A port found free can be taken by another process before redis binds it: a few are tried.
 */
export async function startRedisProcess(
  argsOf: (port: number, dir: string) => string[],
): Promise<{ port: number; stop: () => Promise<void> }> {
  requireRedisBinaries();
  let lastError: unknown;
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort(false);
    try {
      return { port, stop: await spawnRedisProcess(port, (dir) => argsOf(port, dir)) };
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}

/**
 * Starts a Redis Cluster of 3 masters (no replicas, unless `options.replicas`: then one replica per
 * master) from `redis-server --cluster-enabled yes` on free ports, assigns the slots with
 * `CLUSTER ADDSLOTSRANGE`, joins the nodes with `CLUSTER MEET` (and each replica to its master with
 * `CLUSTER REPLICATE`), and resolves once every node reports `cluster_state:ok` (and every replica's
 * link to its master is up).
 */
export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<RedisClusterHandle> {
  if (externalRedis('REDIS_CLUSTER_NODES') === undefined) requireRedisBinaries();
  const external = externalRedis('REDIS_CLUSTER_NODES');
  if (external) {
    const nodes = external.split(',').map((hostPort) => {
      const [host, port] = hostPort.trim().split(':');
      return { host: host!, port: Number(port) };
    });
    return { nodes, replicas: [], external: true, kill: async () => {}, stop: async () => {} };
  }
  const stops = new Map<number, () => Promise<void>>();
  const stopAll = async () => {
    await Promise.all([...stops.values()].map((stop) => stop()));
  };
  const withReplicas = options.replicas === true;
  const settings = withReplicas
    ? [
        '--cluster-enabled',
        'yes',
        '--cluster-node-timeout',
        '500',
        '--cluster-require-full-coverage',
        'no',
        '--repl-diskless-sync-delay',
        '0',
      ]
    : ['--cluster-enabled', 'yes', '--cluster-node-timeout', '2000'];
  try {
    const all: number[] = [];
    for (let i = 0; i < (withReplicas ? 6 : 3); i++) {
      let started = false;
      for (let attempt = 0; attempt < 5 && !started; attempt++) {
        // The cluster bus listens on port + 10000: both must be free.
        const port = await freePort(true);
        try {
          stops.set(port, await spawnRedis(port, settings));
          all.push(port);
          started = true;
        } catch (error) {
          if (attempt === 4) throw error;
        }
      }
    }
    const ports = all.slice(0, 3);
    const replicaPorts = all.slice(3);
    const slotsPerNode = Math.ceil(16384 / ports.length);
    for (let i = 0; i < ports.length; i++) {
      const first = i * slotsPerNode;
      const last = Math.min(16383, first + slotsPerNode - 1);
      cli(ports[i]!, ['CLUSTER', 'ADDSLOTSRANGE', String(first), String(last)]);
    }
    for (let i = 1; i < all.length; i++) cli(all[0]!, ['CLUSTER', 'MEET', HOST, String(all[i])]);
    const deadline = Date.now() + START_TIMEOUT_MS;
    const waitFor = async (ready: () => boolean) => {
      while (!ready()) {
        if (Date.now() > deadline) throw new Error(`The Redis cluster on ports ${all.join(', ')} did not become ready`);
        await sleep(50);
      }
    };
    if (withReplicas) {
      // A replica can follow a master only once it knows that node (the MEETs have spread).
      await waitFor(() =>
        replicaPorts.every((port) => cli(port, ['CLUSTER', 'INFO']).includes(`cluster_known_nodes:${all.length}`)),
      );
      replicaPorts.forEach((port, i) =>
        cli(port, ['CLUSTER', 'REPLICATE', cli(ports[i]!, ['CLUSTER', 'MYID']).trim()]),
      );
      await waitFor(() =>
        replicaPorts.every((port) => cli(port, ['INFO', 'replication']).includes('master_link_status:up')),
      );
    }
    await waitFor(() => all.every((port) => clusterReady(port, all.length)));
    const kill = async (port: number) => {
      await stops.get(port)?.();
    };
    return {
      nodes: ports.map((port) => ({ host: HOST, port })),
      replicas: replicaPorts.map((port) => ({ host: HOST, port })),
      external: false,
      kill,
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

function clusterReady(port: number, size: number): boolean {
  const info = cli(port, ['CLUSTER', 'INFO']);
  return (
    info.includes('cluster_state:ok') &&
    info.includes(`cluster_known_nodes:${size}`) &&
    info.includes('cluster_slots_ok:16384')
  );
}

/** Runs `redis-cli` against a local port and returns its output; throws on failure. */
export function cli(port: number, args: string[]): string {
  const result = spawnSync('redis-cli', ['-h', HOST, '-p', String(port), ...args], {
    encoding: 'utf8',
    timeout: 5_000,
  });
  if (result.status !== 0 || result.error)
    throw new Error(`redis-cli ${args.join(' ')} failed: ${result.error?.message ?? result.stderr}`);
  return result.stdout;
}

function spawnRedis(port: number, extra: string[]): Promise<() => Promise<void>> {
  return spawnRedisProcess(port, (dir) => redisServerArgs(port, dir, extra));
}

/** Starts `redis-server` with `argsOf(dir)` (`dir` a new temporary directory); resolves to its stop once it answers PING on `port`. */
async function spawnRedisProcess(port: number, argsOf: (dir: string) => string[]): Promise<() => Promise<void>> {
  const dir = mkdtempSync(join(tmpdir(), 'rl-redis-'));
  const child = spawn('redis-server', argsOf(dir), { stdio: 'ignore' });
  const entry = { child, dir };
  live.add(entry);
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  let spawnError: Error | undefined;
  child.once('error', (error) => {
    spawnError = error;
  });
  const stop = async () => {
    if (!live.has(entry)) return;
    live.delete(entry);
    child.kill('SIGKILL');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (!(await pings(port))) {
    if (spawnError || child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(
        `redis-server did not start on port ${port}: ${spawnError?.message ?? `exit code ${child.exitCode}`}`,
      );
    }
    await sleep(20);
  }
  return stop;
}

/** True when something on the port answers a PING with +PONG. */
function pings(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    let answer = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once('error', () => done(false));
    socket.on('data', (data) => {
      answer += data.toString();
      if (answer.includes('\r\n')) done(answer.startsWith('+PONG'));
    });
    socket.connect(port, HOST, () => socket.write('PING\r\n'));
  });
}

/** A port that is free now (and, with `withBus`, port + 10000 too). */
async function freePort(withBus: boolean): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = withBus ? 20_000 + Math.floor(Math.random() * 20_000) : await ephemeralPort();
    if (withBus ? (await isFree(port)) && (await isFree(port + 10_000)) : true) return port;
  }
  throw new Error('No free port found for redis-server');
}

function ephemeralPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, HOST, () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, HOST, () => server.close(() => resolve(true)));
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
