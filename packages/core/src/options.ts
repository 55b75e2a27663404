import type { Algorithm } from './algorithm.js';
import { InvalidOptionError } from './errors.js';
import { parseDuration } from './duration.js';

/**
 * Throws when `options` is not a plain object or has keys outside `allowed` (unknown options are
 * errors, never ignored). Every unknown key is reported in one {@link InvalidOptionError} (its
 * `fields` lists them, `field` is the first); a key found in `peerHints` (a peer's option name) is
 * named with its rl equivalent.
 */
export function checkOptions(
  options: unknown,
  allowed: readonly string[],
  owner: string,
  peerHints: Readonly<Record<string, string>> = {},
): Record<string, unknown> {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new InvalidOptionError(owner, options, 'an options object');
  }
  const unknown = Object.keys(options).filter((name) => !allowed.includes(name));
  if (unknown.length === 0) return options as Record<string, unknown>;
  // Own properties only: a name such as `constructor` or `toString` is no hint.
  const hint = (name: string): string | undefined => (Object.hasOwn(peerHints, name) ? peerHints[name] : undefined);
  const takes = `${owner} takes ${allowed.join(', ')}`;
  const first = unknown[0]!;
  if (unknown.length === 1) {
    const h = hint(first);
    throw new InvalidOptionError(
      `${owner}.${first}`,
      (options as Record<string, unknown>)[first],
      `no such option${h ? ` (${h})` : ''}; ${takes}`,
    );
  }
  const each = unknown.map((name) => {
    const h = hint(name);
    return h ? `${name} (${h})` : name;
  });
  throw new InvalidOptionError(
    `${owner}.${first}`,
    (options as Record<string, unknown>)[first],
    `no such options: ${each.join('; ')}; ${takes}`,
    { fields: unknown.map((name) => `${owner}.${name}`) },
  );
}

/** A finite number greater than 0. */
export function positiveNumber(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new InvalidOptionError(field, value, 'a finite number greater than 0');
  }
  return value;
}

/** An integer of at least `min` (1 by default). */
export function integerAtLeast(value: unknown, field: string, min = 1): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
    throw new InvalidOptionError(field, value, `an integer of at least ${min}`);
  }
  return value;
}

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/** True when `text` has only printable ASCII characters (space to `~`; the empty string has none other). */
export function isPrintableAscii(text: string): boolean {
  return PRINTABLE_ASCII.test(text);
}

/** A boolean option: `fallback` when not given (undefined); anything but a boolean, null included, is refused. */
export function optionalBoolean(value: unknown, field: string, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new InvalidOptionError(field, value, 'true or false');
  return value;
}

/**
 * Refuses `value`, given at `field`, when `algorithm` is a concurrency limit, which takes no such
 * option: `reason` says why and what to give instead. A rate limit, or no algorithm yet, takes it.
 */
export function refuseOnConcurrency(
  algorithm: Algorithm | undefined,
  field: string,
  value: unknown,
  reason: string,
): void {
  if (algorithm?.stateKind === 'leases') throw new InvalidOptionError(field, value, reason);
}

/**
 * The largest count an option takes (a limit, a capacity, a rate per interval): 15 digits, the most a
 * structured-field integer may have, so a quota and a remaining count are written in the RateLimit
 * headers as they are.
 */
export const MAX_COUNT = 999_999_999_999_999;

/**
 * The longest window, interval or lease, and the longest time a bucket may take to recover, in
 * milliseconds (about 31,000 years): far beyond any policy, yet a clock reading plus this span is
 * still an exact integer, and its whole seconds are written in a header as they are.
 */
export const MAX_SPAN_MS = 999_999_999_999_999;

/** An integer from 1 to {@link MAX_COUNT}: a limit or a capacity. */
export function countOption(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_COUNT) {
    throw new InvalidOptionError(
      field,
      value,
      `an integer from 1 to ${MAX_COUNT} (a RateLimit header's integer has at most 15 digits)`,
    );
  }
  return value;
}

/**
 * A duration from 1 ms to {@link MAX_SPAN_MS} (a window, an interval, a lease): a shorter one makes
 * the per-millisecond arithmetic of the algorithms overflow, a longer one has no exact end time.
 */
export function spanOption(value: unknown, field: string): number {
  const ms = parseDuration(value, field);
  if (ms < 1 || ms > MAX_SPAN_MS)
    throw new InvalidOptionError(field, value, `a duration from 1ms to ${MAX_SPAN_MS}ms (about 31,000 years)`);
  return ms;
}
