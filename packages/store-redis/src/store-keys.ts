import calculateSlot from 'cluster-key-slot';
import { bucketOf, fieldOf, placementOf, redisKeyBase } from './keys.js';
import type { ScriptPlan } from './script-plan.js';
import { isIdempotent, type Call } from './wire.js';

/** The suffix of the key that holds the remembered ids of a state with keys of its own. */
export const IDEMPOTENCY_KEY_SUFFIX = ':idem';

/**
 * Where a store keeps each storage key's state: the Redis keys (and in the compact layout the field)
 * of a plan, and on a Cluster their slot. One per store.
 */
export class StoreKeys {
  /** Compact layout, on a Cluster: each bucket's slot, by bucket number, computed on first use. */
  private readonly bucketSlots: number[] = [];

  constructor(
    private readonly prefix: string,
    private readonly buckets: number,
    /** The client's `keyPrefix` (as text), which Cluster slots are computed with. */
    private readonly keyPrefix: string,
    /** True on a Cluster client: slots matter. */
    private readonly cluster: boolean,
  ) {}

  /**
   * What a call of `plan`'s script (for `call`) starts with: its Redis keys, then in the compact layout
   * the field; a state with keys of its own adds, for a call with an idempotent charge, the key of its
   * remembered ids (`<name>:idem`).
   */
  start(plan: ScriptPlan, key: string, call?: Call): string[] {
    if (plan.compact) return [this.bucketKey(plan, key), fieldOf(key)];
    const name = this.base(key) + plan.suffix;
    const keys = plan.keys.map((suffix) => name + suffix);
    if (call !== undefined && isIdempotent(call)) keys.push(name + IDEMPOTENCY_KEY_SUFFIX);
    return keys;
  }

  /** The common start of `key`'s own Redis keys (see `redisKeyBase`). */
  base(key: string): string {
    return redisKeyBase(this.prefix, key, this.buckets);
  }

  /** On a Cluster, the slot of `key`'s Redis keys (`firstKey` the first: all of a limit's keys share its slot); 0 on a standalone client. */
  slotOf(plan: ScriptPlan, key: string, firstKey: string): number {
    if (!this.cluster) return 0;
    // A bucket's slot is that of its hash tag, the same for every kind: computed once per bucket.
    if (plan.compact)
      return (this.bucketSlots[bucketOf(placementOf(key), this.buckets)] ??= calculateSlot(this.keyPrefix + firstKey));
    return calculateSlot(this.keyPrefix + firstKey);
  }

  /** The first Redis key of `key`'s state under `plan`. */
  firstKey(plan: ScriptPlan, key: string): string {
    return plan.compact ? this.bucketKey(plan, key) : this.base(key) + plan.suffix + plan.keys[0]!;
  }

  bucketKey(plan: ScriptPlan, key: string): string {
    // A key that names a hash tag is placed by the tag: the limits of one tag share a bucket, hence a slot.
    const bucket = bucketOf(placementOf(key), this.buckets);
    // `#` and hex: a tag that hashTagOf never gives a storage key (a plain key never starts with `#`, a
    // digest is 44 characters), so a bucket never shares its name with a key of the per-key layout,
    // of this version or of an earlier one.
    return (plan.bucketKeys[bucket] ??= `${this.prefix}{#${bucket.toString(16)}}${plan.suffix}`);
  }
}
