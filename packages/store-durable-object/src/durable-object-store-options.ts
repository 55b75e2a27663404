import { checkOptions, InvalidOptionError } from '@rl/core/store';

/** What the store uses of a Durable Object namespace binding (`env.RATE_LIMITER`): ids by name, and a stub's fetch. */
export interface DurableObjectNamespaceLike {
  idFromName(name: string): unknown;
  get(id: never): {
    fetch(input: string, init: { method: string; headers: Record<string, string>; body: string }): Promise<Response>;
  };
}

/** Options of `DurableObjectStore`. */
export interface DurableObjectStoreOptions {
  /** The binding of `RateLimitObject` (`env.RATE_LIMITER`: the name you gave it in wrangler's configuration). */
  namespace: DurableObjectNamespaceLike;
  /**
   * How many objects the keys are spread over (default 1: one object, one thread, for every key).
   * A key's object is chosen by its hash tag (see the README, "Which object decides a key"). Changing
   * it moves keys to other objects: their states start again.
   */
  shards?: number;
  /** The prefix of the objects' names (default `'rl'`: objects `rl:0`, `rl:1`, …): stores of other names share nothing. */
  name?: string;
}

/** The options of `DurableObjectStore`, checked: each `InvalidOptionError` names the option to fix. */
export function parseDurableObjectStoreOptions(options: DurableObjectStoreOptions): {
  namespace: DurableObjectNamespaceLike;
  shards: number;
  name: string;
} {
  const o = checkOptions(options, ['namespace', 'shards', 'name'], 'DurableObjectStore');
  const namespace = o.namespace as DurableObjectNamespaceLike | undefined;
  if (
    typeof namespace !== 'object' ||
    namespace === null ||
    typeof namespace.idFromName !== 'function' ||
    typeof namespace.get !== 'function'
  )
    throw new InvalidOptionError(
      'DurableObjectStore.namespace',
      namespace,
      "the Durable Object binding of RateLimitObject (env.RATE_LIMITER: `export { RateLimitObject } from '@rl/store-durable-object'` in the Worker, and a durable_objects binding in wrangler's configuration)",
    );
  const shards = o.shards === undefined ? 1 : o.shards;
  if (typeof shards !== 'number' || !Number.isInteger(shards) || shards < 1 || shards > 1_000_000)
    throw new InvalidOptionError('DurableObjectStore.shards', shards, 'an integer from 1 to 1,000,000');
  const name = o.name === undefined ? 'rl' : o.name;
  if (typeof name !== 'string' || name === '')
    throw new InvalidOptionError('DurableObjectStore.name', name, 'a non-empty string');
  return { namespace, shards, name };
}
