import type { ScriptCall } from '../script-plan.js';
import type { ClientAdapter } from './adapter.js';
import { isNoScript, scriptSha1 } from './script-sha.js';

/**
 * A node-redis client (the `redis` package, or `@redis/client`), 4 or later: `createClient()`,
 * `createCluster()`, and from 5 on `createClientPool()` and `createSentinel()`.
 * Structural, so that the store's types name no client package. It must be connected
 * (`await client.connect()`): node-redis does not connect by itself.
 */
export interface NodeRedisClient {
  readonly isOpen: boolean;
  evalSha(...args: never[]): unknown;
  sendCommand(...args: never[]): unknown;
}

interface EvalOptions {
  keys: string[];
  arguments: string[];
}

/** The parts of a node-redis client the adapter reads (all majors from 4 on). */
interface NodeRedis extends NodeRedisClient {
  evalSha(sha: string, options: EvalOptions): Promise<unknown>;
  eval(lua: string, options: EvalOptions): Promise<unknown>;
  hDel(key: string, fields: string[]): Promise<unknown>;
  del(keys: string[]): Promise<unknown>;
  publish(channel: string, message: string): Promise<unknown>;
  /** A new client with the same options (a Cluster: a new Cluster); absent on a pool and on a node-redis 5 Sentinel. */
  duplicate?(): NodeRedisSubscriber;
  /** A Sentinel client only: the master it sends commands to. */
  getMasterNode?(): unknown;
  /** A Sentinel client: pub/sub on a connection of its own. */
  subscribe?(channel: string, listener: (message: string) => void): Promise<unknown>;
  unsubscribe?(channel: string, listener: (message: string) => void): Promise<unknown>;
  once?(event: 'end', listener: () => void): unknown;
  /** 5 and later: a view of the client whose replies are typed as asked. */
  withTypeMapping?(mapping: Record<number, unknown>): NodeRedis;
  /** Cluster only: each slot's shard (its master and replicas). */
  readonly slots?: readonly ({ master?: { address?: string } } | undefined)[];
  readonly masters?: unknown;
}

/** A duplicate of a node-redis client, to subscribe with. */
interface NodeRedisSubscriber {
  on(event: 'error', listener: (error: unknown) => void): unknown;
  on(event: 'ready', listener: () => void): unknown;
  connect(): Promise<unknown>;
  subscribe?(channel: string, listener: (message: string) => void): Promise<unknown>;
  disconnect?(): Promise<unknown>;
  quit?(): Promise<unknown>;
}

/** node-redis 4: a command with options (`returnBuffers`), standalone or Cluster (routed by its first key). */
interface NodeRedis4 {
  sendCommand(args: string[], options: { returnBuffers: true }): Promise<unknown>;
}
interface NodeRedis4Cluster {
  sendCommand(firstKey: string | undefined, isReadonly: boolean, args: string[], options: { returnBuffers: true }): Promise<unknown>;
}

/**
 * RESP_TYPES.BLOB_STRING of node-redis 5+ (the RESP type byte `$`): a script's string reply. Mapped to
 * Buffer, the reply keeps its bytes (the default decodes it as UTF-8, which breaks the doubles).
 */
const BLOB_STRING = 36;
const RETURN_BUFFERS = { returnBuffers: true } as const;

/** node-redis has `evalSha` and `hDel` (camel case), ioredis `evalsha` and `hdel`. */
export function isNodeRedisLike(client: object): client is NodeRedis {
  const c = client as Partial<NodeRedis>;
  return typeof c.evalSha === 'function' && typeof c.sendCommand === 'function' && typeof c.hDel === 'function' && typeof c.del === 'function';
}

/**
 * node-redis runs a script only by `EVAL`/`EVALSHA` (its `defineScript` scripts must be given when the
 * client is created), does not send a script again after `NOSCRIPT`, and has no key prefix. So the
 * store computes each script's SHA1, sends `EVALSHA`, and on `NOSCRIPT` sends `EVAL` (which caches
 * the script again on the node that ran it). Binary replies: from 5 on, a view of the client with
 * blob strings mapped to Buffer (`withTypeMapping`); on 4, `sendCommand` with `returnBuffers`.
 * Cluster failure domains come from the client's slot table (`slots[slot].master.address`).
 *
 * A node-redis Cluster follows `ASK` and `MOVED` but rejects `TRYAGAIN` at once, which Redis answers
 * while a slot migrates and a script's keys (a sliding log and its `:sum`) are split between the two
 * nodes: the store retries it, every {@link TRY_AGAIN_DELAY_MS} ms, at most {@link TRY_AGAIN_RETRIES}
 * times, as the ioredis settings its documentation gives do.
 */
export function nodeRedisAdapter(client: NodeRedis): ClientAdapter {
  const cluster = 'masters' in client && 'slots' in client;
  const send = typeof client.withTypeMapping === 'function' ? typedSend(client.withTypeMapping({ [BLOB_STRING]: Buffer })) : version4Send(client, cluster);
  return {
    keyPrefix: '',
    masterOf: cluster ? (slot) => client.slots?.[slot]?.master?.address ?? '' : undefined,
    script: (_name, numberOfKeys, lua) => {
      const sha = scriptSha1(lua);
      const run: ScriptCall = (...args) => send(sha, lua, numberOfKeys, args);
      return cluster ? (...args) => retryTryAgain(() => run(...args), TRY_AGAIN_RETRIES) : run;
    },
    batchScript: (_name, lua) => {
      const sha = scriptSha1(lua);
      const run = (numberOfKeys: number, args: string[]) => send(sha, lua, numberOfKeys, args);
      return cluster ? (numberOfKeys, args) => retryTryAgain(() => run(numberOfKeys, args), TRY_AGAIN_RETRIES) : run;
    },
    hdel: (key, fields) => client.hDel(key, fields),
    del: (keys) => client.del(keys),
    publish: (channel, message) => client.publish(channel, message),
    subscribe: subscriptionOf(client),
    closedReason: () =>
      client.isOpen === false ? 'the node-redis client is not open: call `await client.connect()` before the store uses it (the store never opens or closes it)' : undefined,
  };
}

/** `EVALSHA` of the script's SHA1, then `EVAL` of its text on `NOSCRIPT`: `args` are its keys, then its arguments. */
type Send = (sha: string, lua: string, numberOfKeys: number, args: string[]) => Promise<unknown>;

/** node-redis 5 and later, on the view of the client that returns Buffers. */
function typedSend(typed: NodeRedis): Send {
  return (sha, lua, numberOfKeys, args) => {
    const options: EvalOptions = { keys: args.slice(0, numberOfKeys), arguments: args.slice(numberOfKeys) };
    return typed.evalSha(sha, options).catch((error: unknown) => {
      if (isNoScript(error)) return typed.eval(lua, options);
      throw error;
    });
  };
}

/** node-redis 4, whose only way to a Buffer reply without importing the package is `sendCommand`'s options. */
function version4Send(client: NodeRedis, cluster: boolean): Send {
  // A Cluster routes a command by the key it is given: the script's first key, after `EVALSHA sha n`.
  const command = cluster
    ? (args: string[]) => (client as unknown as NodeRedis4Cluster).sendCommand(args[3], false, args, RETURN_BUFFERS)
    : (args: string[]) => (client as unknown as NodeRedis4).sendCommand(args, RETURN_BUFFERS);
  return (sha, lua, numberOfKeys, args) => {
    const count = String(numberOfKeys);
    return command(['EVALSHA', sha, count, ...args]).catch((error: unknown) => {
      if (isNoScript(error)) return command(['EVAL', lua, count, ...args]);
      throw error;
    });
  };
}

/** Milliseconds between two tries of a call Redis answered `TRYAGAIN` (a slot migrating). */
const TRY_AGAIN_DELAY_MS = 2;
/** Tries after the first: with the delay, about 40 ms, within the limiter's default 50 ms timeout. */
const TRY_AGAIN_RETRIES = 20;

/** `call()`, again after {@link TRY_AGAIN_DELAY_MS} while it rejects with `TRYAGAIN`, at most `retries` more times. */
function retryTryAgain(call: () => Promise<unknown>, retries: number): Promise<unknown> {
  return call().catch((error: unknown) => {
    if (retries === 0 || !(error instanceof Error) || !error.message.startsWith('TRYAGAIN')) throw error;
    return new Promise((resolve) => setTimeout(resolve, TRY_AGAIN_DELAY_MS)).then(() => retryTryAgain(call, retries - 1));
  });
}

function ignore(): void {}

/**
 * How the store subscribes to its reset channel with `client` (see `ClientAdapter.subscribe`): a
 * Sentinel client subscribes itself (its pub/sub runs on a connection of its own, apart from its
 * commands); another client through a duplicate, a connection of the store's; a pool cannot.
 */
function subscriptionOf(client: NodeRedis): ClientAdapter['subscribe'] {
  if (typeof client.getMasterNode === 'function' && typeof client.subscribe === 'function') {
    return async (channel, onMessage, onConnected) => {
      await client.subscribe!(channel, onMessage);
      onConnected();
      return async () => {
        await client.unsubscribe?.(channel, onMessage);
      };
    };
  }
  if (typeof client.duplicate !== 'function') return undefined;
  return async (channel, onMessage, onConnected) => {
    const subscriber = client.duplicate!();
    // It reconnects (and subscribes again) by itself; an error event must not be unhandled.
    subscriber.on('error', ignore);
    await subscriber.connect();
    // Once, by whichever comes first (the store's close or the client's end); a connection already
    // closed by node-redis itself leaves nothing to do.
    let closing: Promise<void> | undefined;
    const close = (): Promise<void> =>
      (closing ??= Promise.resolve()
        .then(() => subscriber.disconnect?.() ?? subscriber.quit?.())
        .then(ignore, ignore));
    if (typeof subscriber.subscribe !== 'function') {
      await close();
      throw new Error('this node-redis client cannot subscribe');
    }
    try {
      await subscriber.subscribe(channel, onMessage);
    } catch (error) {
      await close();
      throw error;
    }
    onConnected();
    // After a break node-redis connects again and subscribes again by itself.
    subscriber.on('ready', onConnected);
    // It lives as long as the client it duplicates: closing the client closes it too.
    client.once?.('end', () => void close());
    return close;
  };
}
