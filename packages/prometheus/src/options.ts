import {
  DEFAULT_DELAY_BOUNDARIES,
  DEFAULT_STORE_BOUNDARIES,
  parseExporterOptions,
  type CommonExporterOptions,
  type ExporterConfig,
} from '@rl/core';
import type { Registry } from 'prom-client';

/** Upper bounds (seconds) of `rl_delay_seconds`: `@rl/core`'s `DEFAULT_DELAY_BOUNDARIES`, from 1 ms to a minute. Prometheus adds `+Inf`. */
export const DEFAULT_DELAY_BUCKETS: readonly number[] = DEFAULT_DELAY_BOUNDARIES;

/** Upper bounds (seconds) of `rl_store_duration_seconds`: `@rl/core`'s `DEFAULT_STORE_BOUNDARIES`, from 100 µs to one second. Prometheus adds `+Inf`. */
export const DEFAULT_STORE_BUCKETS: readonly number[] = DEFAULT_STORE_BOUNDARIES;

/** `storeDurations` ({@link CommonExporterOptions}): `rl_store_duration_seconds`. */
export interface PrometheusObserverOptions extends CommonExporterOptions {
  /** The prom-client registry the metrics are registered on (`new Registry()`, or prom-client's default `register`). */
  registry: Registry;
  /** Prepended to every metric name. Default `'rl_'`. Must match `[a-zA-Z_:][a-zA-Z0-9_:]*` (or be empty). */
  prefix?: string;
  /** Bucket upper bounds of the delay histogram, in seconds, increasing. Default {@link DEFAULT_DELAY_BUCKETS}. */
  delayBuckets?: readonly number[];
  /** Bucket upper bounds of the store duration histogram, in seconds, increasing. Default {@link DEFAULT_STORE_BUCKETS}. */
  storeBuckets?: readonly number[];
}

// Duck-typed rather than `instanceof`: the application's registry may come from another copy of prom-client.
const isRegistry = (value: unknown): value is Registry =>
  value !== null &&
  typeof value === 'object' &&
  typeof (value as Registry).getSingleMetric === 'function' &&
  typeof (value as Registry).registerMetric === 'function';

/** Checks the options once, at construction: unknown names, a registry that is not one, bad prefixes and buckets throw `InvalidOptionError`. */
export function parseOptions(options: PrometheusObserverOptions): ExporterConfig<Registry> {
  return parseExporterOptions(options, {
    owner: 'prometheusObserver',
    target: ['registry', isRegistry, "a prom-client Registry (`new Registry()` or prom-client's `register`)"],
    // Prometheus' metric name grammar: the prefix is the start of every name, so it must be a valid start.
    prefix: [
      'rl_',
      // `__` begins the names Prometheus reserves for its own use.
      /^(?!__)([a-zA-Z_:][a-zA-Z0-9_:]*)?$/,
      'a string of letters, digits, _ and : that does not start with a digit or with __ (a Prometheus metric name prefix; __ is reserved)',
    ],
    boundaries: { delay: 'delayBuckets', storeDuration: 'storeBuckets' },
  });
}
