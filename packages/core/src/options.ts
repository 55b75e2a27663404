import { InvalidOptionError } from './errors.js';

/** Throws when `options` is not a plain object or has a key outside `allowed` (unknown options are errors, never ignored). */
export function checkOptions(options: unknown, allowed: readonly string[], owner: string): Record<string, unknown> {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new InvalidOptionError(owner, options, 'an options object');
  }
  for (const name of Object.keys(options)) {
    if (!allowed.includes(name)) {
      throw new InvalidOptionError(`${owner}.${name}`, (options as Record<string, unknown>)[name], `no such option; ${owner} takes ${allowed.join(', ')}`);
    }
  }
  return options as Record<string, unknown>;
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

export function optionalBoolean(value: unknown, field: string, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new InvalidOptionError(field, value, 'true or false');
  return value;
}
