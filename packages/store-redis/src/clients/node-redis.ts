import calculateSlot from 'cluster-key-slot';
import type { ScriptCall } from '../script-plan.js';
import { messageOf, type ClientAdapter, type SubscriptionHandlers } from './adapter.js';
import { isUnknownCommand } from './ioredis.js';
import { ReplyPacer } from './reply-pacer.js';
import { isNoScript, scriptSha1 } from './script-sha.js';
import {
  keepSubscribed,
  listenBeside,
  type ConnectionEvents,
  type ListenedEmitter,
  type SubscriberConnection,
  type SubscriberPlan,
} from './subscription.js';

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
  publish(channel: string, message: string): Promise<number>;
  /** Cluster: Redis 7 sharded pub/sub, run by the master of the channel's slot. */
  sPublish?(channel: string, message: string): Promise<number>;
  /** A new client with the same options (a Cluster: a new Cluster); absent on a pool and on a node-redis 5 Sentinel. */
  duplicate?(): NodeRedisSubscriber;
  /** A Sentinel client only: the master it sends commands to. */
  getMasterNode?(): unknown;
  /** A Sentinel client: pub/sub on a connection of its own. */
  subscribe?(channel: string, listener: (message: string) => void): Promise<unknown>;
  unsubscribe?(channel: string, listener: (message: string) => void): Promise<unknown>;
  on?(event: 'end' | 'disconnect', listener: () => void): unknown;
  off?(event: 'end' | 'disconnect', listener: () => void): unknown;
  getMaxListeners?(): number;
  setMaxListeners?(count: number): unknown;
  /** 5 and later: a view of the client whose replies are typed as asked. */
  withTypeMapping?(mapping: Record<number, unknown>): NodeRedis;
  /** 5 and later: a view of the client with these command options over its own. */
  withCommandOptions?(options: { typeMapping: Record<number, unknown>; timeout: number }): NodeRedis;
  /** A client of one connection: true while connected and ready (what it is given is written in the same turn). */
  readonly isReady?: boolean;
  /** Cluster only: each slot's shard (its master and replicas). */
  readonly slots?: readonly ({ master?: { address?: string } } | undefined)[];
  readonly masters?: unknown;
  /** Cluster only: the master of a slot, and the cluster's client of a node (a promise while it connects). */
  getSlotMaster?(slot: number): unknown;
  nodeClient?(node: unknown): NodeRedisNode | Promise<NodeRedisNode>;
}

/** A Cluster's client of one node. */
interface NodeRedisNode extends ListenedEmitter<'end'> {
  duplicate(): NodeRedisSubscriber;
}

/** A client of the store's, to subscribe with. */
interface NodeRedisSubscriber {
  /** `'sharded-channel-moved'`: Redis dropped the shard subscription, the channels' slot having moved. */
  on(
    event: 'error' | 'end' | 'reconnecting' | 'connect' | 'sharded-channel-moved',
    listener: (error?: unknown) => void,
  ): unknown;
  connect(): Promise<unknown>;
  subscribe?(channels: string[], listener: (message: string, channel: string) => void): Promise<unknown>;
  sSubscribe?(channels: string[], listener: (message: string, channel: string) => void): Promise<unknown>;
  /** 5 and later (closes at once). */
  destroy?(): void;
  /** 4. */
  disconnect?(): Promise<unknown>;
}

/** node-redis 4: a command with options (`returnBuffers`), standalone or Cluster (routed by its first key). */
interface NodeRedis4 {
  sendCommand(args: string[], options: { returnBuffers: true }): Promise<unknown>;
}
interface NodeRedis4Cluster {
  sendCommand(
    firstKey: string | undefined,
    isReadonly: boolean,
    args: string[],
    options: { returnBuffers: true },
  ): Promise<unknown>;
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
  return (
    typeof c.evalSha === 'function' &&
    typeof c.sendCommand === 'function' &&
    typeof c.hDel === 'function' &&
    typeof c.del === 'function'
  );
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
  // A client of one connection (createClient): not a Cluster, a pool or a Sentinel, which route each
  // command to a client of theirs, some after an await (the pacing needs the write queued by the call).
  const single = !cluster && typeof client.duplicate === 'function' && typeof client.getMasterNode !== 'function';
  const unpaced =
    typeof client.withTypeMapping === 'function' ? typedSend(client, single) : version4Send(client, cluster);
  const send = single ? pacedSend(unpaced) : unpaced;
  return {
    keyPrefix: '',
    cluster,
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
    // On a Cluster the sharded command, whose count is exact (see `ClientAdapter.publish`).
    publish:
      cluster && typeof client.sPublish === 'function'
        ? (channel, message) => client.sPublish!(channel, message)
        : (channel, message) => client.publish(channel, message),
    subscribe: subscriptionOf(client, cluster),
    closedReason: () =>
      client.isOpen === false
        ? 'the node-redis client is not open: call `await client.connect()` before the store uses it (the store never opens or closes it)'
        : undefined,
    serverReply: messageOf,
  };
}

/** `EVALSHA` of the script's SHA1, then `EVAL` of its text on `NOSCRIPT`: `args` are its keys, then its arguments. */
type Send = (sha: string, lua: string, numberOfKeys: number, args: string[]) => Promise<unknown>;

/**
 * node-redis 5 and later, on a view of the client that returns Buffers. node-redis 6 gives each command
 * a timeout (`commandOptions.timeout`, 5 s by default: an `AbortSignal.timeout`, a timer and a listener
 * per command) that bounds its wait to be written and ends when it is written. A single client that
 * is ready writes what it is given in the same turn, so the store's calls made then go through a view
 * without one (`single`); a call made while it is not ready (connecting again, its commands queued)
 * keeps the client's timeout, so that a call on a dead connection still ends.
 */
function typedSend(client: NodeRedis, single: boolean): Send {
  const mapping = { [BLOB_STRING]: Buffer };
  const typed = client.withTypeMapping!(mapping);
  // timeout 0: none (node-redis sets a timer only for a positive one); the client's other options stay.
  const written =
    single && typeof client.withCommandOptions === 'function'
      ? client.withCommandOptions({ typeMapping: mapping, timeout: 0 })
      : typed;
  return (sha, lua, numberOfKeys, args) => {
    const options: EvalOptions = { keys: args.slice(0, numberOfKeys), arguments: args.slice(numberOfKeys) };
    const view = client.isReady === true ? written : typed;
    return view.evalSha(sha, options).catch((error: unknown) => {
      if (isNoScript(error)) return (client.isReady === true ? written : typed).eval(lua, options);
      throw error;
    });
  };
}

/** `send` through a {@link ReplyPacer}: node-redis writes in a `setImmediate` of its own (4 by its cork, 5 and 6 by `#scheduleWrite`). */
function pacedSend(send: Send): Send {
  const pacer = new ReplyPacer();
  return (sha, lua, numberOfKeys, args) => {
    const answer = send(sha, lua, numberOfKeys, args);
    pacer.sent();
    return pacer.pace(answer);
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
    return new Promise((resolve) => setTimeout(resolve, TRY_AGAIN_DELAY_MS)).then(() =>
      retryTryAgain(call, retries - 1),
    );
  });
}

function ignore(): void {}

/**
 * How the store subscribes with `client` (see `ClientAdapter.subscribe`): a Sentinel client subscribes
 * itself (its pub/sub runs on a connection of its own, apart from its commands, closed with it);
 * another client through a connection of the store's (see {@link subscriptionPlan}); a pool cannot.
 */
function subscriptionOf(client: NodeRedis, cluster: boolean): ClientAdapter['subscribe'] {
  if (typeof client.getMasterNode === 'function' && typeof client.subscribe === 'function') {
    return (handlers) => {
      let closed = false;
      const listeners = handlers.channels.map((channel) => (message: string) => {
        if (!closed) handlers.onMessage(channel, message);
      });
      void Promise.all(handlers.channels.map((channel, i) => client.subscribe!(channel, listeners[i]!))).then(
        () => {
          if (!closed) handlers.onLive(true);
        },
        (error: unknown) => {
          if (!closed) handlers.onRefused(error);
        },
      );
      return async () => {
        if (closed) return;
        closed = true;
        handlers.onLive(false);
        await Promise.all(handlers.channels.map((channel, i) => client.unsubscribe?.(channel, listeners[i]!))).catch(
          ignore,
        );
      };
    };
  }
  if (typeof client.duplicate !== 'function' && !(cluster && typeof client.nodeClient === 'function')) return undefined;
  return (handlers) => keepSubscribed(subscriptionPlan(client, cluster, handlers), handlers);
}

/**
 * A standalone client is duplicated and subscribes by `SUBSCRIBE`. A Cluster: a duplicate of its
 * client of the master of the channels' slot, by `SSUBSCRIBE`; each new connection asks the slot
 * table again (after a failover, the promoted master). node-redis 4's Cluster tells no end of its
 * own: the end of its client of that master is a break, and the next attempt finds the Cluster closed.
 */
function subscriptionPlan(client: NodeRedis, cluster: boolean, handlers: SubscriptionHandlers): SubscriberPlan {
  const channels = [...handlers.channels];
  const slot = calculateSlot(channels[0]!);
  const connect = (
    events: ConnectionEvents,
    from: { duplicate(): NodeRedisSubscriber },
    onClose: () => void,
  ): SubscriberConnection => {
    const subscriber = from.duplicate();
    // node-redis would reconnect by itself: a break is told, and the store opens a new connection.
    const broken = (): void => events.broken();
    subscriber.on('error', broken);
    subscriber.on('end', broken);
    subscriber.on('reconnecting', broken);
    // The channels' slot moved (a resharding, a failover): Redis unsubscribed this connection.
    subscriber.on('sharded-channel-moved', broken);
    const heard = (message: string, channel: string): void => events.message(channel, message);
    let closing = false;
    const kill = (): void => {
      if (typeof subscriber.destroy === 'function') subscriber.destroy();
      else subscriber.disconnect?.().catch(ignore);
    };
    // A close while node-redis is opening the socket leaves it open once connected (it checks no
    // close between the two): closed again as soon as it says it has connected.
    subscriber.on('connect', () => {
      if (closing) kill();
    });
    return {
      subscribe: async () => {
        await subscriber.connect();
        const subscribe = cluster ? subscriber.sSubscribe : subscriber.subscribe;
        if (typeof subscribe !== 'function')
          throw new Error('ERR unknown command: this node-redis client cannot subscribe');
        await subscribe.call(subscriber, channels, heard);
      },
      close: () => {
        if (closing) return;
        closing = true;
        onClose();
        try {
          kill();
        } catch {
          // Already closed by node-redis itself.
        }
      },
    };
  };
  return {
    open: async (events) => {
      if (!cluster) return connect(events, client as { duplicate(): NodeRedisSubscriber }, ignore);
      const master = client.getSlotMaster?.(slot);
      if (master === undefined) return undefined;
      const node = await client.nodeClient!(master);
      // The Cluster's own client of that node, shared by every store on the Cluster: its bound is raised per store.
      const stopWatching = listenBeside(node, 'end', () => events.broken());
      return connect(events, node, stopWatching);
    },
    watchEnd: (ended) => {
      // A client's end; a Cluster's (5 and later: 'disconnect').
      const event = cluster ? 'disconnect' : 'end';
      if (client.on === undefined || client.off === undefined) return () => {};
      return listenBeside(client as ListenedEmitter<typeof event>, event, ended);
    },
    ended: () => client.isOpen === false,
    refused: isUnknownCommand,
  };
}
