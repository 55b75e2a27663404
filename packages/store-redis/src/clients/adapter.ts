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
   * On a Cluster client only: the master that serves `slot` (`"host:port"`, from the client's slot
   * table), `''` while the client has no table yet. Absent on a client with no slot table
   * (standalone, Sentinel, a pool): the whole store is one failure domain.
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
  /** `PUBLISH channel message` (on a Cluster, any node: Redis broadcasts it to every node). */
  publish(channel: string, message: string): Promise<unknown>;
  /**
   * Subscribes a connection of its own (a duplicate of the client, with its options) to `channel`;
   * `onMessage` hears each message, and `onConnected` is called once subscribed and again each time the
   * connection is ready after a break (messages sent meanwhile were lost). Resolves to what closes
   * that connection. Undefined for a client that cannot subscribe (a node-redis pool).
   */
  readonly subscribe?: (channel: string, onMessage: (message: string) => void, onConnected: () => void) => Promise<() => Promise<void>>;
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
}
