import { InvalidOptionError } from '@rl/core/store';
import type { ScriptCall } from '../script-plan.js';
import type { ClientAdapter } from './adapter.js';
import { isNoScript, scriptSha1 } from './script-sha.js';

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
  publish(channel: string, message: string): Promise<unknown>;
  duplicate(): IoredisSubscriber;
  once(event: 'end', listener: () => void): unknown;
}

/** A duplicate of an ioredis client, in subscriber mode. */
interface IoredisSubscriber {
  on(event: 'message', listener: (channel: string, message: string) => void): unknown;
  on(event: 'error', listener: (error: unknown) => void): unknown;
  on(event: 'ready', listener: () => void): unknown;
  subscribe(channel: string): Promise<unknown>;
  disconnect(): void;
}

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
    throw new InvalidOptionError('RedisStore.client', rawPrefix, 'a Cluster client whose keyPrefix has no empty hash tag "{}" (Redis would hash every whole key, and a limit\'s keys would land in different slots)');
  }
  const keyPrefix = typeof rawPrefix === 'string' ? rawPrefix : Buffer.isBuffer(rawPrefix) ? rawPrefix.toString('latin1') : '';
  const commands = client as unknown as Record<string, ScriptCall | undefined>;
  return {
    keyPrefix,
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
    publish: (channel, message) => client.publish(channel, message),
    subscribe: async (channel, onMessage, onConnected) => {
      const subscriber = client.duplicate();
      // It reconnects (and subscribes again) by itself; an error event must not be unhandled.
      subscriber.on('error', ignore);
      subscriber.on('message', (from, message) => {
        if (from === channel) onMessage(message);
      });
      try {
        await subscriber.subscribe(channel);
      } catch (error) {
        subscriber.disconnect();
        throw error;
      }
      onConnected();
      // After a break ioredis connects again and subscribes again by itself.
      subscriber.on('ready', onConnected);
      // It lives as long as the client it duplicates: closing the client closes it too.
      client.once('end', () => subscriber.disconnect());
      return async () => subscriber.disconnect();
    },
    closedReason: () =>
      // 'end': closed by quit() or disconnect(), or ioredis stopped reconnecting (its retryStrategy
      // returned no delay; a Cluster reached none of its startup nodes). Otherwise it reconnects itself.
      client.status === 'end'
        ? 'the ioredis client has ended: closed by quit() or disconnect(), or it stopped reconnecting (its retryStrategy returned no delay, or a Cluster reached none of its startup nodes); the store never reconnects it: pass an open client, or let its retryStrategy keep retrying'
        : undefined,
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

function ignore(): void {}
