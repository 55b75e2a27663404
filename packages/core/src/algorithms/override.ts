import { isAlgorithm, type Algorithm } from '../algorithm.js';
import { InvalidAlgorithmError, InvalidOptionError } from '../errors.js';

/** The copies made so far, per algorithm object: a per-request algorithm (a plan reused) is derived once. */
const derived = new WeakMap<Algorithm, Algorithm>();

/**
 * `algorithm` checking the key's override (`limiter.setOverride`, `Store.setOverride`) in the same
 * store step as its decision: a copy that says it (`checksOverrides`, `script.overrides`), the same
 * kind, state and lockout. A store then decides a key with a live override with the override's
 * configuration (its Lua twin with the override's numbers in place of its constants), and the
 * decision carries the override's policy. A concurrency algorithm is returned as it is (permits take
 * no override). Made once per algorithm object.
 */
export function withOverrides<A extends Algorithm>(algorithm: A): A {
  if (algorithm.checksOverrides === true || algorithm.stateKind === 'leases') return algorithm;
  let copy = derived.get(algorithm);
  if (copy === undefined) {
    copy = { ...algorithm, checksOverrides: true, script: { ...algorithm.script, overrides: true } } as Algorithm;
    derived.set(algorithm, copy);
  }
  return copy as A;
}

/**
 * `value` when it can override keys of a limit whose own algorithm is `base` (undefined: a limiter
 * whose calls bring their algorithms): a rate algorithm without a lockout of its own (the limit's
 * lockout applies), of the same kind as `base`, with the same constants that change with time (a
 * calendar's periods: an override changes the numbers of a limit, not its calendar). Otherwise throws
 * `InvalidAlgorithmError` (not an algorithm) or `InvalidOptionError` naming `field`.
 */
export function checkOverride(value: unknown, base: Algorithm | undefined, field: string): Algorithm {
  if (!isAlgorithm(value)) {
    throw new InvalidAlgorithmError(
      value,
      "an override is an algorithm such as fixedWindow({ limit: 10, window: '1m' })",
    );
  }
  if (value.stateKind === 'leases')
    throw new InvalidOptionError(field, value.kind, 'a rate algorithm (a concurrency limit takes no override)');
  if (value.blockMs > 0)
    throw new InvalidOptionError(
      field,
      value.kind,
      "an algorithm without a lockout of its own (the limit's blockDuration applies to an overridden key too)",
    );
  if (base !== undefined && base.kind !== value.kind) {
    throw new InvalidOptionError(
      field,
      value.kind,
      `a ${base.kind} algorithm, as the limit's own (an override changes a limit's numbers; the key's state is kept)`,
    );
  }
  const timed = value.script.timed;
  if (timed !== undefined) {
    const now = Date.now();
    const same = base?.script.timed !== undefined && base.script.timed.values(now).join() === timed.values(now).join();
    if (!same)
      throw new InvalidOptionError(
        field,
        value.kind,
        `the periods of the limit's own ${value.kind} (its period, time zone and week start: an override changes only its numbers)`,
      );
  }
  return value;
}
