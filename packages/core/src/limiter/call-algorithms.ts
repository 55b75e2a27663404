import { isAlgorithm, type Algorithm } from '../algorithm.js';
import { withBans, withBlock } from '../algorithms/block.js';
import { withOverrides } from '../algorithms/override.js';
import { InvalidAlgorithmError } from '../errors.js';
import type { Store } from '../store/interface.js';
import { checkStoreBlocks } from './block-options.js';
import { checkStoreRuns } from './options.js';
import { rateLayouts } from './rate-layouts.js';

/**
 * The algorithms a limiter is called with besides its own (`consume(key, cost, algorithm)`: a plan or a
 * quota chosen per request). Checks each once per algorithm object: a rate algorithm the store runs,
 * given the limiter's lockout (`blockMs`), or carrying its own on a store that runs lockouts.
 * Keeps one algorithm per state layout it has seen, so that `reset(key)` can forget a key's state in
 * every layout it may have: a table bounded by the number of algorithm kinds, never by the number of
 * configurations (10,000 quotas of one kind are one entry).
 */
/** What {@link CallAlgorithms} needs of its limiter's options. */
export interface CallingLimiter {
  readonly store: Store;
  readonly algorithm: Algorithm | undefined;
  readonly blockMs: number;
  readonly bans?: boolean;
  readonly overrides?: boolean;
}

export class CallAlgorithms {
  /** Algorithm objects already checked: a plan object reused per request is checked once. Collected with them. */
  private readonly checked = new WeakSet<object>();
  /** One algorithm per layout (`stateTag` and revision) seen, the limiter's own first. */
  private readonly byLayout = new Map<string, Algorithm>();

  private readonly store: Store;
  /** The limiter's lockout in ms (0: none), given to every algorithm a call brings. */
  private readonly blockMs: number;
  /** Whether the limiter checks bans (option `bans`): every algorithm a call brings does too. */
  private readonly bans: boolean;
  /** Whether the limiter checks overrides (option `overrides`): every algorithm a call brings does too. */
  private readonly overrides: boolean;
  /** True for a limiter without an algorithm of its own: every algorithm comes with a call. */
  private readonly perCall: boolean;

  /** The calls of a limiter on `store` whose own algorithm (if any) is `algorithm`, with its lockout, bans and overrides. */
  constructor(limiter: CallingLimiter) {
    ({ store: this.store, blockMs: this.blockMs } = limiter);
    this.bans = limiter.bans === true;
    this.overrides = limiter.overrides === true;
    this.perCall = limiter.algorithm === undefined;
    if (limiter.algorithm !== undefined) this.byLayout.set(layoutOf(limiter.algorithm), limiter.algorithm);
  }

  /**
   * `value`, with the limiter's lockout, when this limiter can be called with it; otherwise throws
   * {@link InvalidAlgorithmError} (not an algorithm, or a concurrency algorithm: permits are taken with
   * `acquire`) or `UnsupportedError` (the store does not run that kind, or a lockout it carries).
   * Nothing is charged either way.
   */
  check(value: unknown): Algorithm {
    if (!this.checked.has(value as object)) {
      if (!isAlgorithm(value)) {
        throw new InvalidAlgorithmError(
          value,
          "expected an algorithm such as tokenBucket({ capacity: 20, refillRate: 10 }) or fixedWindow({ limit: 100, window: '1m' })",
        );
      }
      if (value.stateKind === 'leases') {
        throw new InvalidAlgorithmError(
          value,
          'a concurrency algorithm where a rate algorithm is expected (a limit chosen per call is a rate limit; give a concurrency limit a limit of its own)',
        );
      }
      checkStoreRuns(this.store, value);
      const layout = layoutOf(value);
      if (!this.byLayout.has(layout)) this.byLayout.set(layout, value);
      this.checked.add(value);
    }
    return this.withLockout(value as Algorithm);
  }

  /** `algorithm` with the limiter's lockout, ban check and override check, if it has them (derived once per object); an algorithm that carries its own lockout needs a store that runs lockouts. */
  withLockout(algorithm: Algorithm): Algorithm {
    let a = algorithm;
    if (this.blockMs > 0) a = withBlock(a, this.blockMs);
    else if (a.blockMs > 0) checkStoreBlocks(this.store, `the ${a.kind} algorithm has a block of ${a.blockMs} ms`);
    if (this.bans) a = withBans(a);
    return this.overrides ? withOverrides(a) : a;
  }

  /**
   * The algorithms a ban or unban goes through: one per rate state layout (`rateLayouts`), those of
   * the kinds the store runs, and any other layout seen (a newer revision), each as `layouts` gives it.
   */
  *banLayouts(): IterableIterator<Algorithm> {
    yield* this.layoutsBeyond(new Set(), [...this.byLayout.values(), ...rateLayouts()]);
  }

  /**
   * The layouts a reset lifts a ban in without forgetting a state there ({@link banLayouts} beyond
   * {@link layouts}): a ban is written in every rate layout, so that a plan of another kind chosen
   * per call (here or in another instance) is denied too, and a reset lifts it there as well.
   */
  *unbanOnReset(): IterableIterator<Algorithm> {
    if (!this.perCall) yield* this.layoutsBeyond(new Set(this.byLayout.keys()), rateLayouts());
  }

  /** Each of `algorithms` of a rate layout the store runs and not in `seen` (nor met before), with the limiter's lockout. */
  private *layoutsBeyond(seen: Set<string>, algorithms: readonly Algorithm[]): IterableIterator<Algorithm> {
    for (const algorithm of algorithms) {
      const layout = layoutOf(algorithm);
      if (
        algorithm.stateKind === 'leases' ||
        seen.has(layout) ||
        !this.store.capabilities.algorithms.includes(algorithm.kind)
      )
        continue;
      seen.add(layout);
      yield this.withLockout(algorithm);
    }
  }

  /**
   * The algorithms a reset goes through, each with the limiter's lockout, to forget every state a key
   * may have (and its block): one per state layout seen; for a limiter without an algorithm of its own,
   * those of {@link banLayouts} (every rate layout the store runs), since another instance, or this one
   * before a restart, may have charged the key in a layout this one has not seen.
   */
  *layouts(): IterableIterator<Algorithm> {
    if (this.perCall) yield* this.banLayouts();
    else for (const algorithm of this.byLayout.values()) yield this.withLockout(algorithm);
  }
}

function layoutOf(algorithm: Algorithm): string {
  return `${algorithm.stateTag}:${algorithm.script.layoutRevision}`;
}
