import { InvalidOptionError } from '@rl/core';
import { checkOptions } from '@rl/core/store';
import type { Registry } from 'prom-client';

/**
 * Upper bounds (seconds) of `rl_delay_seconds`: from a millisecond of shaping to a minute of waiting
 * for a reservation. Prometheus adds `+Inf`.
 */
export const DEFAULT_DELAY_BUCKETS: readonly number[] = Object.freeze([0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]);

/**
 * Upper bounds (seconds) of `rl_store_duration_seconds`: from 100 µs (the memory store answers
 * below it) through the milliseconds of a Redis round trip to one second (beyond any sane store
 * timeout).
 */
export const DEFAULT_STORE_BUCKETS: readonly number[] = Object.freeze([0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1]);

export interface PrometheusObserverOptions {
  /** The prom-client registry the metrics are registered on (`new Registry()`, or prom-client's default `register`). */
  registry: Registry;
  /** Prepended to every metric name. Default `'rl_'`. Must match `[a-zA-Z_:][a-zA-Z0-9_:]*` (or be empty). */
  prefix?: string;
  /** Bucket upper bounds of the delay histogram, in seconds, increasing. Default {@link DEFAULT_DELAY_BUCKETS}. */
  delayBuckets?: readonly number[];
  /** Bucket upper bounds of the store duration histogram, in seconds, increasing. Default {@link DEFAULT_STORE_BUCKETS}. */
  storeBuckets?: readonly number[];
}

/** {@link PrometheusObserverOptions} checked, with the defaults filled in. */
export interface PrometheusConfig {
  readonly registry: Registry;
  readonly prefix: string;
  readonly delayBuckets: readonly number[];
  readonly storeBuckets: readonly number[];
}

const OWNER = 'prometheusObserver';
const OPTION_NAMES = ['registry', 'prefix', 'delayBuckets', 'storeBuckets'];
// Prometheus' metric name grammar; the prefix is the start of every name, so it must be a valid start.
const PREFIX = /^([a-zA-Z_:][a-zA-Z0-9_:]*)?$/;

/** Checks the options once, at construction: unknown names, a registry that is not one, bad names and buckets throw {@link InvalidOptionError}. */
export function parseOptions(options: PrometheusObserverOptions): PrometheusConfig {
  const given = checkOptions(options, OPTION_NAMES, OWNER);
  const registry = given.registry as Registry | undefined;
  // Duck-typed rather than `instanceof`: the application's registry may come from another copy of prom-client.
  if (registry === null || typeof registry !== 'object' || typeof registry.getSingleMetric !== 'function' || typeof registry.registerMetric !== 'function') {
    throw new InvalidOptionError(`${OWNER}.registry`, registry, "a prom-client Registry (`new Registry()` or prom-client's `register`)");
  }
  const prefix = given.prefix ?? 'rl_';
  if (typeof prefix !== 'string' || !PREFIX.test(prefix)) {
    throw new InvalidOptionError(`${OWNER}.prefix`, prefix, 'a string of letters, digits, _ and : that does not start with a digit (a Prometheus metric name prefix)');
  }
  return Object.freeze({
    registry,
    prefix,
    delayBuckets: buckets(given.delayBuckets, DEFAULT_DELAY_BUCKETS, 'delayBuckets'),
    storeBuckets: buckets(given.storeBuckets, DEFAULT_STORE_BUCKETS, 'storeBuckets'),
  });
}

function buckets(value: unknown, fallback: readonly number[], name: string): readonly number[] {
  if (value === undefined) return fallback;
  const ok =
    Array.isArray(value) &&
    value.length > 0 &&
    value.every((bound, i) => typeof bound === 'number' && Number.isFinite(bound) && bound > 0 && (i === 0 || bound > (value[i - 1] as number)));
  if (!ok) throw new InvalidOptionError(`${OWNER}.${name}`, value, 'a non-empty array of finite numbers of seconds, each greater than 0 and than the one before');
  return Object.freeze([...(value as number[])]);
}
