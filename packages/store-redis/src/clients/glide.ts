import { messageOf, type ClientAdapter, type SubscriptionHandlers } from './adapter.js';
import { scriptSha1 } from './script-sha.js';
import { keepSubscribed, type SubscriberConnection, type SubscriberPlan } from './subscription.js';

/**
 * A Valkey GLIDE client (`@valkey/valkey-glide` 2 or later): a `GlideClient` (standalone) or a
 * `GlideClusterClient`. Structural, so that the store's types name no client package.
 */
export interface GlideClient {
  customCommand(args: never[], options?: never): Promise<unknown>;
  invokeScript(script: never, options?: never): Promise<unknown>;
}

/** `Decoder.Bytes` of GLIDE (written as a number so that the store imports nothing from the package). */
const BYTES = 0;
const AS_BYTES = { decoder: BYTES } as const;

/** The parts of a GLIDE client the adapter reads. */
interface Glide extends GlideClient {
  customCommand(args: string[], options?: { decoder: number }): Promise<unknown>;
  publish(message: string, channel: string, sharded?: boolean): Promise<number>;
  hdel(key: string, fields: string[]): Promise<number>;
  del(keys: string[]): Promise<number>;
  /** Cluster only (GLIDE's `GlideClusterClient`): a script run on a route of the caller's. */
  invokeScriptWithRoute?: unknown;
  /** Set by `close()` (a field of GLIDE's BaseClient, not typed as public). */
  readonly isClosed?: boolean;
  /** The configuration the client was created with (a field of GLIDE's BaseClient): the subscriber's is made from it. */
  readonly config?: Record<string, unknown>;
  /** The client's class, whose static `createClient` makes the store's subscriber. */
  readonly constructor: { createClient?(config: Record<string, unknown>): Promise<GlideSubscriber> };
}

/** A GLIDE client of the store's, created with a pub/sub callback. */
interface GlideSubscriber {
  subscribe?(channels: Set<string>, timeoutMs: number): Promise<void>;
  ssubscribe?(channels: Set<string>, timeoutMs: number): Promise<void>;
  close(): void;
}

/** A message as GLIDE's pub/sub callback gives it (strings: the subscriber decodes as strings). */
interface GlideMessage {
  readonly channel: unknown;
  readonly message: unknown;
}

/** How long the store's subscriber waits for the server to confirm its subscription before it tries a new client, in ms. */
const SUBSCRIBE_TIMEOUT_MS = 5_000;
/** How often the store looks whether the user closed their GLIDE client (GLIDE emits no event), in ms. */
const CLOSED_POLL_MS = 250;

/** GLIDE clients have `customCommand` and `invokeScript`; ioredis and node-redis have neither. */
export function isGlideLike(client: object): client is Glide {
  const c = client as Partial<Glide>;
  return typeof c.customCommand === 'function' && typeof c.invokeScript === 'function';
}

/**
 * GLIDE's error for `NOSCRIPT` ("… NoScriptError: No matching script …"): GLIDE names the server's
 * error kind instead of passing its text through.
 */
function isGlideNoScript(error: unknown): boolean {
  return error instanceof Error && /NoScriptError|NOSCRIPT/.test(error.message);
}

/** The error codes of the kinds GLIDE's core names (`… signalled by the server: - TryAgain: x`), by name. */
const GLIDE_ERROR_CODES: Readonly<Record<string, string>> = {
  ResponseError: 'ERR',
  NoScriptError: 'NOSCRIPT',
  TryAgain: 'TRYAGAIN',
  Moved: 'MOVED',
  Ask: 'ASK',
  BusyLoadingError: 'LOADING',
  ReadOnly: 'READONLY',
  ClusterDown: 'CLUSTERDOWN',
  CrossSlot: 'CROSSSLOT',
  MasterDown: 'MASTERDOWN',
};

/**
 * The reply of a GLIDE error as Redis wrote it. GLIDE rewrites a reply whose code its core knows as
 * `An error was signalled by the server: - <Kind>: <text>` (`ERR rl: x` is `- ResponseError: rl: x`)
 * and one it does not as `<CODE>: <text>` (`WRONGTYPE: Operation …`); other errors (a closed client,
 * a timeout) are their message.
 */
export function glideServerReply(error: unknown): string {
  const message = messageOf(error);
  const named = /^An error was signalled by the server: - (\w+): ([^]*)$/.exec(message);
  if (named !== null) {
    const code = GLIDE_ERROR_CODES[named[1]!];
    return code === undefined ? message : `${code} ${named[2]!}`;
  }
  const coded = /^([A-Z]+): ([^]*)$/.exec(message);
  return coded === null ? message : `${coded[1]!} ${coded[2]!}`;
}

/**
 * GLIDE runs every command through its native core, which routes a Cluster command by its key (for
 * `EVALSHA`, the first key after the count) and follows `MOVED` and `ASK` itself (a slot migration that
 * splits a script's keys fails its calls: docs/design/stores.md, "Valkey GLIDE"). The store sends `EVALSHA` by `customCommand` and `EVAL` on `NOSCRIPT`, with `Decoder.Bytes` so that the
 * reply keeps its bytes; not `invokeScript`, which takes a `Script` object of the package's (the store
 * imports nothing from an optional peer) that holds native memory until its `release()` (a store has
 * no moment to release it: it never owns the client). GLIDE has no key prefix and exposes no slot
 * table: a GLIDE Cluster is one failure domain.
 */
export function glideAdapter(client: Glide): ClientAdapter {
  const cluster = client.invokeScriptWithRoute !== undefined;
  const send = (sha: string, lua: string, numberOfKeys: number, args: string[]): Promise<unknown> => {
    const count = String(numberOfKeys);
    return client.customCommand(['EVALSHA', sha, count, ...args], AS_BYTES).catch((error: unknown) => {
      if (isGlideNoScript(error)) return client.customCommand(['EVAL', lua, count, ...args], AS_BYTES);
      throw error;
    });
  };
  return {
    keyPrefix: '',
    cluster,
    script: (_name, numberOfKeys, lua) => {
      const sha = scriptSha1(lua);
      return (...args) => send(sha, lua, numberOfKeys, args);
    },
    batchScript: (_name, lua) => {
      const sha = scriptSha1(lua);
      return (numberOfKeys, args) => send(sha, lua, numberOfKeys, args);
    },
    hdel: (key, fields) => client.hdel(key, fields),
    del: (keys) => client.del(keys),
    // GLIDE's argument order is (message, channel); on a Cluster the sharded command (see `ClientAdapter.publish`).
    publish: cluster
      ? (channel, message) => client.publish(message, channel, true)
      : (channel, message) => client.publish(message, channel),
    subscribe:
      typeof client.constructor?.createClient === 'function' && client.config !== undefined
        ? (handlers) => keepSubscribed(subscriptionPlan(client, cluster, handlers), handlers)
        : undefined,
    closedReason: () =>
      client.isClosed === true
        ? 'the GLIDE client was closed by close(); the store never reopens it: pass an open client (GlideClient.createClient(...))'
        : undefined,
    serverReply: glideServerReply,
  };
}

/**
 * How the store subscribes with a GLIDE client. GLIDE delivers pub/sub messages to the callback given
 * when a client is created, so the store never subscribes the user's client (its messages would go to
 * the user's callback or queue): it creates a GLIDE client of its own, of the same class, from the
 * user's client's configuration with the store's callback, and subscribes it (`SUBSCRIBE`; on a
 * Cluster `SSUBSCRIBE`, which GLIDE sends to the master of the channels' slot) with GLIDE's blocking
 * call, which resolves once the server confirmed. GLIDE reconnects that client and subscribes it
 * again by itself, and tells no break: see docs/design/stores.md, "Valkey GLIDE", for what that costs.
 */
function subscriptionPlan(client: Glide, cluster: boolean, handlers: SubscriptionHandlers): SubscriberPlan {
  const channels = new Set(handlers.channels);
  return {
    open: async (events): Promise<SubscriberConnection> => {
      const subscriber = await client.constructor.createClient!({
        ...client.config,
        lazyConnect: false,
        pubsubSubscriptions: {
          channelsAndPatterns: {},
          callback: (message: GlideMessage) => {
            const channel = String(message.channel);
            if (channels.has(channel)) events.message(channel, String(message.message));
          },
        },
      });
      return {
        subscribe: async () => {
          const subscribe = cluster ? subscriber.ssubscribe : subscriber.subscribe;
          if (typeof subscribe !== 'function')
            throw new Error('ERR unknown command: this GLIDE client cannot subscribe (GLIDE 2.2 or later can)');
          await subscribe.call(subscriber, channels, SUBSCRIBE_TIMEOUT_MS);
        },
        close: () => subscriber.close(),
      };
    },
    watchEnd: (ended) => {
      // GLIDE emits no event when its client is closed: the store looks, on a timer that keeps no process alive.
      const timer = setInterval(() => {
        if (client.isClosed === true) ended();
      }, CLOSED_POLL_MS);
      timer.unref();
      return () => clearInterval(timer);
    },
    ended: () => client.isClosed === true,
    refused: (error) => error instanceof Error && /unknown command/i.test(error.message),
  };
}
