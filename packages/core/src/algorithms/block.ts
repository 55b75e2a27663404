import type { Algorithm, LogAlgorithm, NumericAlgorithm } from '../algorithm.js';
import { InvalidOptionError } from '../errors.js';

/** The suffix of the key that holds a block, in the layout of keys of their own (Redis: in the state's hash tag). */
export const BLOCK_KEY_SUFFIX = ':block';

/** The copies made so far, per algorithm object and block (-1: a ban check alone): a per-request algorithm (a plan reused) is derived once. */
const derived = new WeakMap<Algorithm, Map<number, Algorithm>>();

/**
 * `algorithm` with a lockout of `blockMs` ms (see `AlgorithmCommon.blockMs`): a copy that says it, and
 * describes it to the stores. Its Lua twin is the blocking variant, `<name>-block`, with the constant
 * `BLOCK_MS`; a state kept under keys of its own gets one more, `:block` ({@link BLOCK_KEY_SUFFIX}).
 * Its state is the algorithm's own (same kind and layout), so a limit that gains or loses a lockout
 * keeps its balances. `blockMs` 0 gives the algorithm without a lockout (with `bans`, the copy that
 * checks a ban and starts no lockout: see {@link withBans}). Made once per algorithm object and block
 * (cached while the algorithm lives), so calling it per request costs a lookup.
 *
 * Rate algorithms only: a concurrency algorithm throws `InvalidOptionError` (`field` names the option).
 */
export function withBlock<A extends Algorithm>(
  algorithm: A,
  blockMs: number,
  field = 'blockDuration',
  bans = false,
): A {
  const checks = blockMs > 0 || bans;
  if (algorithm.blockMs === blockMs && algorithm.checksBlocks === checks) return algorithm;
  if (algorithm.stateKind === 'leases') {
    throw new InvalidOptionError(
      field,
      blockMs,
      'no lockout on a concurrency limit (a lockout follows a denied rate; give it a rate limit of its own)',
    );
  }
  let copies = derived.get(algorithm);
  if (copies === undefined) {
    copies = new Map();
    derived.set(algorithm, copies);
  }
  const id = blockMs === 0 && checks ? -1 : blockMs;
  let copy = copies.get(id);
  if (copy === undefined) {
    copy = derive(algorithm, blockMs, checks);
    copies.set(id, copy);
  }
  return copy as A;
}

/**
 * `algorithm` checking the key's ban (`limiter.block`, `Store.ban`) in the same store step as its
 * decision: the blocking variant of its twin, with its own lockout if it has one, else with `BLOCK_MS`
 * 0 (it reads a block and starts none). A concurrency algorithm is returned as it is (permits are not banned).
 */
export function withBans<A extends Algorithm>(algorithm: A): A {
  return algorithm.stateKind === 'leases' ? algorithm : withBlock(algorithm, algorithm.blockMs, 'bans', true);
}

/** The copy of a rate algorithm with `blockMs` (0 without `checks`: the algorithm's own script). */
function derive(algorithm: NumericAlgorithm | LogAlgorithm, blockMs: number, checks: boolean): Algorithm {
  const { script } = algorithm;
  const base = script.name.endsWith('-block') ? script.name.slice(0, -'-block'.length) : script.name;
  const constants = script.constants.filter((c) => c.name !== 'BLOCK_MS');
  const keys = script.layout.compact ? [] : script.layout.keys.filter((k) => k !== BLOCK_KEY_SUFFIX);
  const blocking = blockMs > 0;
  const { blockDuration: _, ...options } = algorithm.options;
  return {
    ...algorithm,
    blockMs,
    checksBlocks: checks,
    options: blocking ? { ...options, blockDuration: blockMs } : options,
    script: {
      ...script,
      name: checks ? `${base}-block` : base,
      constants: checks ? [...constants, { name: 'BLOCK_MS', value: blockMs }] : constants,
      layout: script.layout.compact
        ? script.layout
        : { compact: false, keys: checks ? [...keys, BLOCK_KEY_SUFFIX] : keys },
    },
  };
}
