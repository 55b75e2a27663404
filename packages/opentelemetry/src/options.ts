import type { Meter } from '@opentelemetry/api';
import { InvalidOptionError } from '@rl/core';
import { checkOptions } from '@rl/core/store';

/** Bucket boundaries (seconds) advised for `rl.delay`: from a millisecond of shaping to a minute of waiting for a reservation. */
export const DEFAULT_DELAY_BOUNDARIES: readonly number[] = Object.freeze([0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]);

/**
 * Bucket boundaries (seconds) advised for `rl.store.duration`: from 100 µs (the memory store) through
 * a Redis round trip to one second. The SDK's own default boundaries (0 to 10000) suit milliseconds,
 * not seconds.
 */
export const DEFAULT_STORE_BOUNDARIES: readonly number[] = Object.freeze([0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1]);

export interface OpenTelemetryObserverOptions {
  /** The meter the instruments are created on (`metrics.getMeter('my-service')`). */
  meter: Meter;
  /** Prepended to every instrument name. Default `'rl.'`. Empty, or a letter followed by letters, digits and `_ . - /`. */
  prefix?: string;
  /** Boundaries advised for the delay histogram (seconds, increasing). Default {@link DEFAULT_DELAY_BOUNDARIES}. A View overrides them. */
  delayBoundaries?: readonly number[];
  /** Boundaries advised for the store duration histogram (seconds, increasing). Default {@link DEFAULT_STORE_BOUNDARIES}. A View overrides them. */
  storeBoundaries?: readonly number[];
}

export interface OpenTelemetryConfig {
  readonly meter: Meter;
  readonly prefix: string;
  readonly delayBoundaries: readonly number[];
  readonly storeBoundaries: readonly number[];
}

const OWNER = 'openTelemetryObserver';
// The instrument name syntax of the OpenTelemetry API: the prefix is the start of every name.
const PREFIX = /^([A-Za-z][A-Za-z0-9_.\-/]*)?$/;

/** Checks the options once, at construction; bad ones throw {@link InvalidOptionError}. */
export function parseOptions(options: OpenTelemetryObserverOptions): OpenTelemetryConfig {
  const given = checkOptions(options, ['meter', 'prefix', 'delayBoundaries', 'storeBoundaries'], OWNER);
  const meter = given.meter as Meter | undefined;
  const isMeter = meter !== null && typeof meter === 'object' && ['createCounter', 'createHistogram', 'createUpDownCounter'].every((m) => typeof (meter as unknown as Record<string, unknown>)[m] === 'function');
  if (!isMeter) throw new InvalidOptionError(`${OWNER}.meter`, meter, "an OpenTelemetry Meter (`metrics.getMeter('my-service')` from @opentelemetry/api)");
  const prefix = given.prefix ?? 'rl.';
  if (typeof prefix !== 'string' || !PREFIX.test(prefix)) {
    throw new InvalidOptionError(`${OWNER}.prefix`, prefix, 'an empty string, or a letter followed by letters, digits, _ . - and / (an OpenTelemetry instrument name prefix)');
  }
  return Object.freeze({
    meter,
    prefix,
    delayBoundaries: boundaries(given.delayBoundaries, DEFAULT_DELAY_BOUNDARIES, 'delayBoundaries'),
    storeBoundaries: boundaries(given.storeBoundaries, DEFAULT_STORE_BOUNDARIES, 'storeBoundaries'),
  });
}

function boundaries(value: unknown, fallback: readonly number[], name: string): readonly number[] {
  if (value === undefined) return fallback;
  const increasing = Array.isArray(value) && value.length > 0 && value.every((b, i) => typeof b === 'number' && b > 0 && Number.isFinite(b) && (i === 0 || b > value[i - 1]));
  if (!increasing) throw new InvalidOptionError(`${OWNER}.${name}`, value, 'a non-empty array of finite numbers of seconds, each greater than 0 and than the one before');
  return Object.freeze([...(value as number[])]);
}
