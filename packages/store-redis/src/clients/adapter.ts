import type { BatchCall, ScriptCall } from '../script-plan.js';

/**
 * What the store needs from a client, whatever its family: one adapter per family
 * (src/clients/ioredis.ts, src/clients/node-redis.ts), made once per store.
 */
export interface ClientAdapter {
  /**
   * Text the client puts before every key it sends (ioredis `keyPrefix`), `''` when none: Cluster
   * slots are computed on the prefixed key.
   */
  readonly keyPrefix: string;
  /**
   * True on a Cluster client: a limit's keys share a hash tag, and a batch or a group holds keys of one
   * slot only. False on a standalone, Sentinel or pool client (any keys in one call).
   */
  readonly cluster: boolean;
  /**
   * On a Cluster client only: the master that serves `slot` (`"host:port"`, from the client's slot
   * table), `''` while the client has no table yet. Absent on a client with no slot table
   * (standalone, Sentinel, a pool; a GLIDE Cluster, which exposes none): the whole store is one failure domain.
   */
  readonly masterOf?: (slot: number) => string;
  /**
   * A function that runs the script `lua` (of `numberOfKeys` keys) with its keys then its arguments,
   * by `EVALSHA`, and resolves to the reply as a Buffer (the decision is binary: see prelude.lua).
   * On `NOSCRIPT` (a `SCRIPT FLUSH`, a restarted or failed-over server) it sends the text by `EVAL`,
   * which caches it again. Made once per script text; `name` is unique per text. Its `this` is unused.
   */
  script(name: string, numberOfKeys: number, lua: string): ScriptCall;
  /**
   * A function that runs the batch script `lua` (see batch-script.ts), whose number of keys differs
   * per call: `args` are its `numberOfKeys` keys, then its arguments. Resolves to the reply, an array
   * of Buffers; `EVAL` on `NOSCRIPT` as {@link script}. Made once per script text; `name` unique per text.
   */
  batchScript(name: string, lua: string): BatchCall;
  /**
   * Publishes `message` on `channel` and resolves to the number of connections that received it:
   * `PUBLISH` on a standalone or Sentinel client; on a Cluster `SPUBLISH` (sharded pub/sub, Redis 7),
   * run by the master of the channel's slot, whose count is then every subscriber of the channel (the
   * store's subscribers subscribe there, see {@link subscribe}).
   */
  publish(channel: string, message: string): Promise<number>;
  /**
   * Keeps a connection of the store's own subscribed to `handlers.channels` (all of one Cluster slot):
   * a duplicate of the client, with its options (on a Cluster, of the connection to the master of the
   * channels' slot, by `SSUBSCRIBE`), opened again after each break, closed when the user's client
   * closes (see src/clients/subscription.ts). Returns what closes it. Undefined for a client that
   * cannot subscribe (a node-redis pool).
   */
  readonly subscribe?: (handlers: SubscriptionHandlers) => () => Promise<void>;
  /** `HDEL key ...fields`. */
  hdel(key: string, fields: string[]): Promise<unknown>;
  /** `DEL ...keys` (keys of one slot). */
  del(keys: string[]): Promise<unknown>;
  /**
   * Why every call fails at once, when it does (the client was closed by its owner, or a node-redis
   * client was never connected), said so the user can fix it; `undefined` while the client is usable
   * (connected, or reconnecting with its commands queued). Read only when a call has failed.
   */
  closedReason(): string | undefined;
  /**
   * The error reply `error` carries, as Redis wrote it (`WRONGTYPE Operation …`, `ERR rl: …`,
   * `TRYAGAIN …`), else its message: what tells a failure of one key from one of the server (see
   * store-error.ts). ioredis and node-redis pass the reply through as the message; GLIDE names its kind.
   */
  serverReply(error: unknown): string;
}

/** The message of `error` (its text when it is not an `Error`): the reply, for a client that passes it through. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** What a subscription tells the store (see {@link ClientAdapter.subscribe}). */
export interface SubscriptionHandlers {
  /** The channels, as the store names them (the client's `keyPrefix`, if any, is the adapter's business). */
  readonly channels: readonly string[];
  /** A message on one of the channels (named as in {@link channels}). */
  onMessage(channel: string, message: string): void;
  /**
   * `true` once the server has confirmed the subscription (messages published from then on are
   * received), `false` as soon as the connection is known broken or closed (messages may be lost).
   */
  onLive(live: boolean): void;
  /** Redis refused the subscription itself (an unknown command, such as `SSUBSCRIBE` before Redis 7): the subscription has ended. */
  onRefused(error: unknown): void;
}
