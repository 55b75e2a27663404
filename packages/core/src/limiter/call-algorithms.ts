import type { Algorithm } from '../algorithm.js';
import { InvalidAlgorithmError, UnsupportedError } from '../errors.js';
import type { Store } from '../store/interface.js';
import { isAlgorithm } from './options.js';

/**
 * The algorithms a limiter is called with besides its own (`consume(key, cost, algorithm)`: a plan or a
 * quota chosen per request). Checks each once per algorithm object: a rate algorithm the store runs.
 * Keeps one algorithm per state layout it has seen, so that `reset(key)` can forget a key's state in
 * every layout it may have: a table bounded by the number of algorithm kinds, never by the number of
 * configurations (10,000 quotas of one kind are one entry).
 */
export class CallAlgorithms {
  /** Algorithm objects already checked: a plan object reused per request is checked once. Collected with them. */
  private readonly checked = new WeakSet<object>();
  /** One algorithm per layout (`stateTag` and revision) seen, the limiter's own first. */
  private readonly byLayout = new Map<string, Algorithm>();

  constructor(
    private readonly store: Store,
    own: Algorithm | undefined,
  ) {
    if (own !== undefined) this.byLayout.set(layoutOf(own), own);
  }

  /**
   * `value` when this limiter can be called with it; otherwise throws {@link InvalidAlgorithmError}
   * (not an algorithm, or a concurrency algorithm: permits are taken with `acquire`) or
   * {@link UnsupportedError} (the store does not run that kind). Nothing is charged either way.
   */
  check(value: unknown): Algorithm {
    if (this.checked.has(value as object)) return value as Algorithm;
    if (!isAlgorithm(value)) {
      throw new InvalidAlgorithmError(value, "expected an algorithm such as tokenBucket({ capacity: 20, refillRate: 10 }) or fixedWindow({ limit: 100, window: '1m' })");
    }
    if (value.stateKind === 'leases') {
      throw new InvalidAlgorithmError(value, 'a concurrency algorithm where a rate algorithm is expected (a limit chosen per call is a rate limit; give a concurrency limit a limit of its own)');
    }
    if (!this.store.capabilities.algorithms.includes(value.kind)) {
      throw new UnsupportedError(`This store does not support the ${value.kind} algorithm.`);
    }
    const layout = layoutOf(value);
    if (!this.byLayout.has(layout)) this.byLayout.set(layout, value);
    this.checked.add(value);
    return value;
  }

  /** One algorithm per state layout seen, for a reset of every state a key may have. */
  layouts(): IterableIterator<Algorithm> {
    return this.byLayout.values();
  }
}

function layoutOf(algorithm: Algorithm): string {
  return `${algorithm.stateTag}:${algorithm.script.layoutRevision}`;
}
