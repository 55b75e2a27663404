import { InvalidOptionError, checkOptions, redisClientKind } from '@rl/core/store';
import type { RedisClient } from './clients/client.js';
import { DEFAULT_BUCKETS } from './keys.js';

export interface RedisStoreOptions {
  /**
   * The Redis client, detected by its methods (see the README's "Clients"): ioredis 5 or 6 or iovalkey
   * (a `Redis`, standalone or Sentinel, or a `Cluster`), or node-redis 4 or later, connected
   * (`createClient`, `createCluster`; from 5 on `createClientPool`). The store never
   * opens or closes it: the client belongs to the caller. Anything else throws `InvalidOptionError`.
   *
   * ioredis: the store defines its scripts on it (`defineCommand`). node-redis: the store sends
   * `EVALSHA` and, on `NOSCRIPT`, `EVAL`; on a Cluster it retries `TRYAGAIN` itself (every 2 ms, 20
   * times at most), which node-redis does not, and node-redis follows `ASK` and `MOVED`. What follows
   * is about ioredis's Cluster options.
   *
   * A Cluster client's retries should end within the limiter's `timeout` (default 50 ms): while a slot
   * migrates, Redis answers `TRYAGAIN` to a script whose keys are split between the two nodes (a
   * sliding log and its `:sum` are moved one by one), `ASK` for a key already moved and `MOVED` once
   * the slot has moved. ioredis follows `ASK` at once, retries `MOVED` after `retryDelayOnMoved`
   * (default 0) and `TRYAGAIN` after `retryDelayOnTryAgain` (default 100 ms, twice the default
   * timeout), at most `maxRedirections` times (default 16) in all, then rejects. For a 50 ms timeout,
   * `new Cluster(nodes, { retryDelayOnTryAgain: 2, maxRedirections: 20 })` keeps retrying for about
   * 40 ms. A call still retried when the timeout ends is answered by the limiter's failure policy;
   * if Redis runs it later and it takes units, the limiter gives them back (`giveBack`), as for any call
   * answered after its timeout. A rejected call ran nothing.
   *
   * The client's `keyPrefix` is put before every key: on a Cluster it must not start a hash tag that
   * is empty (`{}`), which would make Redis hash each whole key and split a limit's keys over slots.
   */
  client: RedisClient;
  /**
   * Prepended to every Redis key (default `'rl:'`). It must not contain `{` or `}`: the store puts the
   * limiter's key in a hash tag of its own.
   */
  prefix?: string;
  /**
   * Bucket hashes per algorithm kind in the compact layout (default 16384; an integer from 1 to 2^24).
   * Fewer buckets take less memory per key when there are few keys; more buckets keep each hash short,
   * which Redis reads faster (a field of a compact hash is found by a scan, which grows with the hash).
   * Redis keeps a hash compact up to `hash-max-listpack-entries` fields (512 by default), so the
   * default stays compact up to about 8 million live keys per kind; raise it beyond. Every process that
   * shares a Redis must use the same value: a different one finds no state.
   */
  buckets?: number;
  /**
   * Several decisions in one script call (default on, at most 16 decisions per call). The first
   * decision of a configuration (and on a Cluster, of a slot) in a turn of the event loop is sent at
   * once, alone; the next ones issued in the same turn (requests that arrived together, the
   * `Promise.all` of a caller) wait for the end of the turn's I/O phase (`setImmediate`, never a timer)
   * and go as one call that runs them in the order issued, each atomic and each answered as it would
   * have been alone. It takes a process past the client's ceiling of single calls and costs Redis less
   * per decision; a decision in a batch can wait for the ones before it in the same call (the batch's
   * latency is its sum). `false` sends every decision alone; `{ maxSize }` (an integer from 2 to 1000)
   * sets the most decisions per call. See the README's "Batching".
   */
  batch?: boolean | { maxSize?: number };
  /**
   * How long a reset, ban, unban or override change waits, in ms (an integer from 1 to 60000; default
   * {@link DEFAULT_CONFIRM_TIMEOUT_MS}), for every instance subscribed to the store's notices to
   * confirm that its deny caches forgot the key. Past it the call rejects with
   * `ResetUnconfirmedError` (the change is applied; an instance that did not confirm, frozen or
   * overloaded, forgets the key once it reads the notice). Through a limiter, the call as a whole is
   * bounded by the limiter's `timeout` or 1 s, the longer: keep this below that.
   */
  confirmTimeout?: number;
}

/** Options of the peers' Redis stores and what to write instead. */
const PEER_STORE_OPTIONS: Readonly<Record<string, string>> = Object.freeze({
  sendCommand: "rate-limit-redis's sendCommand: pass the client itself, new RedisStore({ client })",
  storeClient: "rate-limiter-flexible's storeClient: pass it as client, new RedisStore({ client })",
  redis: 'pass the client as client: new RedisStore({ client })',
  keyPrefix: "rate-limiter-flexible's keyPrefix: use prefix (or the limit's own prefix)",
});

/**
 * The default `confirmTimeout`, in ms: an instance confirms within a few ms on one network (its event
 * loop reads the notice and publishes its confirmation; measured p99 42–49 ms on a machine loaded 15 on
 * 2 cores); 250 ms leaves room for an event loop or a garbage collection busy that long, and with the
 * write and the PUBLISH stays well within the 1 s a limiter gives an operator's call at least, so that
 * a control call through a limiter rejects with `ResetUnconfirmedError`, not a timeout.
 */
export const DEFAULT_CONFIRM_TIMEOUT_MS = 250;

/** Decisions per batch call unless `batch.maxSize` says otherwise. */
export const DEFAULT_BATCH_SIZE = 16;

/** The options of a `RedisStore`, checked, with their defaults (`batch` and `confirmTimeout` as numbers). */
export interface RedisStoreConfig extends Readonly<Required<Pick<RedisStoreOptions, 'client' | 'prefix' | 'buckets'>>> {
  /** The most decisions per batch call (1: no batching). */
  readonly batchSize: number;
  readonly confirmTimeoutMs: number;
}

/**
 * Checks the options of `new RedisStore(…)` (throwing `InvalidOptionError` naming the field; the client
 * is checked by its adapter) and applies the defaults. `undefined` is the only "not given": `null` is a
 * bad value like any other.
 */
export function parseStoreOptions(options: RedisStoreOptions): RedisStoreConfig {
  // `new RedisStore(client)`: the client given in place of the options.
  const client = redisClientKind(options);
  if (client !== undefined)
    throw new InvalidOptionError(
      'RedisStore',
      options,
      'an options object with the client in it: new RedisStore({ client })',
      { shown: client },
    );
  const o = checkOptions(
    options,
    ['client', 'prefix', 'buckets', 'batch', 'confirmTimeout'],
    'RedisStore',
    PEER_STORE_OPTIONS,
  );
  const prefix = o.prefix === undefined ? 'rl:' : o.prefix;
  if (typeof prefix !== 'string' || prefix.includes('{') || prefix.includes('}')) {
    throw new InvalidOptionError('RedisStore.prefix', prefix, 'a string without { or }');
  }
  const buckets = o.buckets === undefined ? DEFAULT_BUCKETS : o.buckets;
  if (typeof buckets !== 'number' || !Number.isInteger(buckets) || buckets < 1 || buckets > 2 ** 24) {
    throw new InvalidOptionError('RedisStore.buckets', buckets, 'an integer from 1 to 16777216');
  }
  const confirmTimeoutMs = o.confirmTimeout === undefined ? DEFAULT_CONFIRM_TIMEOUT_MS : o.confirmTimeout;
  if (
    typeof confirmTimeoutMs !== 'number' ||
    !Number.isInteger(confirmTimeoutMs) ||
    confirmTimeoutMs < 1 ||
    confirmTimeoutMs > 60_000
  ) {
    throw new InvalidOptionError(
      'RedisStore.confirmTimeout',
      confirmTimeoutMs,
      'an integer number of ms from 1 to 60000',
    );
  }
  return { client: o.client as RedisClient, prefix, buckets, batchSize: batchSizeOf(o.batch), confirmTimeoutMs };
}

/** The most decisions per batch call `batch` asks for (1: no batching); throws {@link InvalidOptionError} for anything else. */
function batchSizeOf(batch: unknown): number {
  if (batch === undefined || batch === true) return DEFAULT_BATCH_SIZE;
  if (batch === false) return 1;
  if (batch !== null && typeof batch === 'object' && !Array.isArray(batch)) {
    const { maxSize } = checkOptions(batch, ['maxSize'], 'RedisStore.batch');
    const size = maxSize === undefined ? DEFAULT_BATCH_SIZE : maxSize;
    if (typeof size !== 'number' || !Number.isInteger(size) || size < 2 || size > 1000)
      throw new InvalidOptionError('RedisStore.batch.maxSize', size, 'an integer from 2 to 1000');
    return size;
  }
  throw new InvalidOptionError('RedisStore.batch', batch, 'true, false or { maxSize }');
}
