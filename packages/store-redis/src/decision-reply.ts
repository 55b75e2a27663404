import { decisionFromExact, type Algorithm, type Decision } from '@rl/core/store';

/**
 * A reply's decision at `offset`: six exact doubles, allowed, remaining, ms to the reset, to a retry
 * (read only when denied), of the delay, and the `now` it decided at (see prelude.lua); rounded as
 * every step's results are.
 */
export function decisionOf(r: Buffer, offset: number, algorithm: Algorithm): Decision {
  const o = offset;
  return decisionFromExact(r.readDoubleLE(o) === 1, r.readDoubleLE(o + 8), r.readDoubleLE(o + 16), r.readDoubleLE(o + 24), r.readDoubleLE(o + 32), algorithm.limit, algorithm.policy, r.readDoubleLE(o + 40));
}
