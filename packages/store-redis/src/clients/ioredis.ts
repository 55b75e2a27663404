import calculateSlot from 'cluster-key-slot';
import { InvalidOptionError } from '@rl/core/store';
import type { ScriptCall } from '../script-plan.js';
import { messageOf, type ClientAdapter, type SubscriptionHandlers } from './adapter.js';
import { isNoScript, scriptSha1 } from './script-sha.js';
import { keepSubscribed, listenBeside, type ConnectionEvents, type SubscriberPlan } from './subscription.js';

/**
 * An ioredis 5 or 6 client, or an iovalkey client (an ioredis fork with the same API): a `Redis`
 * (standalone, Sentinel) or a `Cluster`. Structural, so that the store's types name no client package.
 */
export interface IoredisClient {
  defineCommand(name: string, definition: { lua: string; numberOfKeys?: number }): void;
}

/** The parts of an ioredis-like client the adapter reads. */
interface Ioredis extends IoredisClient {
  readonly isCluster?: boolean;
  readonly status?: string;
  readonly options?: { keyPrefix?: unknown };
  /** Cluster only: the nodes of each slot, the master first (`"host:port"`). */
  readonly slots?: readonly (readonly string[] | undefined)[];
  evalshaBuffer(sha: string, numberOfKeys: number, ...args: string[]): Promise<unknown>;
  evalBuffer(lua: string, numberOfKeys: number, ...args: string[]): Promise<unknown>;
  hdel(key: string, ...fields: string[]): Promise<unknown>;
  del(...keys: string[]): Promise<unknown>;
  publish(channel: string, message: string): Promise<number>;
  /** Redis 7 sharded pub/sub: on a Cluster, run by the master of the channel's slot. */
  spublish(channel: string, message: string): Promise<number>;
  /** A new connection with this one's options, `override` on top (a `Redis`; a Cluster's takes other arguments). */
  duplicate(override?: Record<string, unknown>): IoredisSubscriber;
  /** Cluster only: its connections to the nodes. */
  nodes?(role: 'master'): Ioredis[];
  /** Cluster only: asks the cluster for its slot table again. */
  refreshSlotsCache?(): void;
  on(event: 'end', listener: () => void): unknown;
  off(event: 'end', listener: () => void): unknown;
  getMaxListeners?(): number;
  setMaxListeners?(count: number): unknown;
}

/** A connection of the store's, in subscriber mode. */
interface IoredisSubscriber {
  on(event: 'message' | 'smessage', listener: (channel: string, message: string) => void): unknown;
  on(event: 'error', listener: (error: unknown) => void): unknown;
  /** `'moved'` (ioredis 6): Redis dropped the shard subscription, the channels' slot having moved. */
  on(event: 'close' | 'moved', listener: () => void): unknown;
  subscribe(...channels: string[]): Promise<unknown>;
  ssubscribe(...channels: string[]): Promise<unknown>;
  disconnect(): void;
}

/**
 * The options of the store's subscriber connections, over the client's: connected now, with commands
 * queued until then (a client made with `lazyConnect` or `enableOfflineQueue: false` would refuse the
 * subscription), never reconnecting or subscribing again by itself (the store opens a new connection
 * after a break, see subscription.ts), and without a `keyPrefix` (the store names the channels in full).
 */
const SUBSCRIBER_OPTIONS = {
  lazyConnect: false,
  enableOfflineQueue: true,
  retryStrategy: () => null,
  autoResubscribe: false,
  keyPrefix: '',
} as const;

/** ioredis and iovalkey define scripts on the client (`defineCommand`); node-redis has no such method. */
export function isIoredisLike(client: object): client is Ioredis {
  return typeof (client as Ioredis).defineCommand === 'function';
}

/**
 * ioredis does most of what the store needs by itself: `defineCommand` gives a command that sends
 * `EVALSHA` and `EVAL` on `NOSCRIPT`, and its `...Buffer` variant resolves to the reply's bytes (a
 * batch script, whose key count varies per call, is sent with `evalshaBuffer` instead: see
 * `batchScript`). The client's `keyPrefix` is put before every key, scripts' keys included.
 */
export function ioredisAdapter(client: Ioredis): ClientAdapter {
  const rawPrefix = client.options?.keyPrefix;
  if (client.isCluster === true && splitsHashTags(rawPrefix)) {
    throw new InvalidOptionError(
      'RedisStore.client',
      rawPrefix,
      'a Cluster client whose keyPrefix has no empty hash tag "{}" (Redis would hash every whole key, and a limit\'s keys would land in different slots)',
    );
  }
  const keyPrefix =
    typeof rawPrefix === 'string' ? rawPrefix : Buffer.isBuffer(rawPrefix) ? rawPrefix.toString('latin1') : '';
  const commands = client as unknown as Record<string, ScriptCall | undefined>;
  return {
    keyPrefix,
    cluster: client.isCluster === true,
    masterOf: client.isCluster === true ? (slot) => client.slots?.[slot]?.[0] ?? '' : undefined,
    script(name, numberOfKeys, lua) {
      if (typeof commands[`${name}Buffer`] !== 'function') client.defineCommand(name, { numberOfKeys, lua });
      // Bound once here, so that a call is a plain call of the client's own command.
      return commands[`${name}Buffer`]!.bind(client);
    },
    batchScript(_name, lua) {
      // EVALSHA and, on NOSCRIPT, EVAL, sent by the store: a command defined without `numberOfKeys`
      // (its count as first argument) breaks under `enableAutoPipelining` (ioredis pairs the replies
      // of the pipeline wrongly), while plain `evalshaBuffer` is pipelined like any command.
      const sha = scriptSha1(lua);
      return (numberOfKeys, args) =>
        client.evalshaBuffer(sha, numberOfKeys, ...args).catch((error: unknown) => {
          if (isNoScript(error)) return client.evalBuffer(lua, numberOfKeys, ...args);
          throw error;
        });
    },
    hdel: (key, fields) => client.hdel(key, ...fields),
    del: (keys) => client.del(...keys),
    // On a Cluster the sharded command, whose count is exact (see `ClientAdapter.publish`); the client
    // puts its keyPrefix before the channel, as before the subscribers' (see `subscriptionPlan`).
    publish:
      client.isCluster === true
        ? (channel, message) => client.spublish(channel, message)
        : (channel, message) => client.publish(channel, message),
    // A client that cannot open a connection of its own (no `duplicate`, or a Cluster without `nodes`) cannot subscribe.
    subscribe:
      typeof client.on === 'function' &&
      typeof (client.isCluster === true ? client.nodes : client.duplicate) === 'function'
        ? (handlers) => keepSubscribed(subscriptionPlan(client, keyPrefix, handlers), handlers)
        : undefined,
    closedReason: () =>
      // 'end': closed by quit() or disconnect(), or ioredis stopped reconnecting (its retryStrategy
      // returned no delay; a Cluster reached none of its startup nodes). Otherwise it reconnects itself.
      client.status === 'end'
        ? 'the ioredis client has ended: closed by quit() or disconnect(), or it stopped reconnecting (its retryStrategy returned no delay, or a Cluster reached none of its startup nodes); the store never reconnects it: pass an open client, or let its retryStrategy keep retrying'
        : undefined,
    serverReply: messageOf,
  };
}

/**
 * True when a key prefix makes Redis Cluster hash whole keys: its first `{` is followed at once by `}`
 * (an empty hash tag). Any other prefix keeps a limit's keys in one slot, since they all begin with
 * `<keyPrefix><prefix>{<tag>}`: the first `}` after the first `{` lies within that common part.
 */
function splitsHashTags(keyPrefix: unknown): boolean {
  if (typeof keyPrefix !== 'string' && !Buffer.isBuffer(keyPrefix)) return false;
  const text = Buffer.isBuffer(keyPrefix) ? keyPrefix.toString('latin1') : keyPrefix;
  const open = text.indexOf('{');
  return open !== -1 && text.charCodeAt(open + 1) === 125;
}

/**
 * How the store subscribes with an ioredis client (see `ClientAdapter.subscribe`). A `Redis`
 * (standalone, or Sentinel: the duplicate asks the sentinels for the master) is duplicated, and
 * subscribes by `SUBSCRIBE`. A Cluster: a duplicate of its connection to the master of the channels'
 * slot, by `SSUBSCRIBE` of the channels as the client sends them (its keyPrefix first, as `SPUBLISH`
 * from the client has them); each new connection reads the slot table again, so one after a failover
 * goes to the promoted master.
 */
function subscriptionPlan(client: Ioredis, keyPrefix: string, handlers: SubscriptionHandlers): SubscriberPlan {
  const cluster = client.isCluster === true;
  const sent = handlers.channels.map((channel) => (cluster ? keyPrefix + channel : channel));
  const named = new Map(sent.map((channel, i) => [channel, handlers.channels[i]!]));
  const slot = calculateSlot(sent[0]!);
  let opened = 0;
  const connect = (events: ConnectionEvents, from: Ioredis): { subscribe(): Promise<unknown>; close(): void } => {
    const subscriber = from.duplicate(SUBSCRIBER_OPTIONS);
    // Errors are told as a break ('close' follows each): an error event must not be unhandled.
    subscriber.on('error', (error: unknown) => {
      // The channels' slot moved (a resharding, a failover): Redis unsubscribed this connection and
      // keeps it open. ioredis 6 tells it as 'moved'; ioredis 5 as an error of its command queue.
      if (error instanceof Error && /sunsubscribe/i.test(error.message)) events.broken();
    });
    subscriber.on('moved', () => events.broken());
    subscriber.on('close', () => events.broken());
    const heard = (channel: string, message: string): void => {
      const name = named.get(channel);
      if (name !== undefined) events.message(name, message);
    };
    subscriber.on(cluster ? 'smessage' : 'message', heard);
    return {
      subscribe: () => (cluster ? subscriber.ssubscribe(...sent) : subscriber.subscribe(...sent)),
      close: () => subscriber.disconnect(),
    };
  };
  return {
    open: (events) => {
      if (!cluster) return connect(events, client);
      // After a break the slot table may be stale (a failover): asked again, read by the next attempt.
      if (opened++ > 0) client.refreshSlotsCache?.();
      const master = client.slots?.[slot]?.[0];
      const node = master === undefined ? undefined : client.nodes?.('master').find((n) => nodeAddress(n) === master);
      return node === undefined ? undefined : connect(events, node);
    },
    watchEnd: (ended) => listenBeside(client, 'end', ended),
    ended: () => client.status === 'end',
    refused: isUnknownCommand,
  };
}

/** `"host:port"` of a Cluster's node connection, as its slot table names nodes. */
function nodeAddress(node: Ioredis): string {
  const options = node.options as { host?: unknown; port?: unknown } | undefined;
  return `${String(options?.host)}:${String(options?.port)}`;
}

/** Redis's answer to a command it does not know (`SSUBSCRIBE` before Redis 7). */
export function isUnknownCommand(error: unknown): boolean {
  return error instanceof Error && /^ERR unknown command/i.test(error.message);
}
