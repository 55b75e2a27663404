import type { Meter } from '@opentelemetry/api';
import {
  DEFAULT_DELAY_BOUNDARIES,
  DEFAULT_STORE_BOUNDARIES,
  parseExporterOptions,
  type CommonExporterOptions,
  type ExporterConfig,
} from '@rl/core';

// The SDK's own default boundaries (0 to 10000) suit milliseconds, not seconds: these are advised instead.
export { DEFAULT_DELAY_BOUNDARIES, DEFAULT_STORE_BOUNDARIES };

/** `storeDurations` ({@link CommonExporterOptions}): `rl.store.duration`. */
export interface OpenTelemetryObserverOptions extends CommonExporterOptions {
  /** The meter the instruments are created on (`metrics.getMeter('my-service')`). */
  meter: Meter;
  /** Prepended to every instrument name. Default `'rl.'`. Empty, or a letter followed by letters, digits and `_ . - /`. */
  prefix?: string;
  /** Boundaries advised for the delay histogram (seconds, increasing). Default {@link DEFAULT_DELAY_BOUNDARIES}. A View overrides them. */
  delayBoundaries?: readonly number[];
  /** Boundaries advised for the store duration histogram (seconds, increasing). Default {@link DEFAULT_STORE_BOUNDARIES}. A View overrides them. */
  storeBoundaries?: readonly number[];
}

/** Checks the options once, at construction; bad ones throw `InvalidOptionError`. */
export function parseOptions(options: OpenTelemetryObserverOptions): ExporterConfig<Meter> {
  // A meter of any API copy or SDK from 1.9 on: the four factories the exporter calls.
  const isMeter = (value: unknown): value is Meter =>
    value !== null &&
    typeof value === 'object' &&
    ['createCounter', 'createHistogram', 'createUpDownCounter', 'createGauge'].every(
      (m) => typeof (value as Record<string, unknown>)[m] === 'function',
    );
  return parseExporterOptions(options, {
    owner: 'openTelemetryObserver',
    target: [
      'meter',
      isMeter,
      "an OpenTelemetry Meter of @opentelemetry/api 1.9 or later (`metrics.getMeter('my-service')`)",
    ],
    // The instrument name syntax of the OpenTelemetry API: the prefix is the start of every name.
    prefix: [
      'rl.',
      // An instrument name is at most 255 characters: 200 leave room for the longest of rl's names.
      /^([A-Za-z][A-Za-z0-9_.\-/]{0,199})?$/,
      'an empty string, or a letter followed by letters, digits, _ . - and /, at most 200 characters (an OpenTelemetry instrument name prefix; a name is at most 255)',
    ],
    boundaries: { delay: 'delayBoundaries', storeDuration: 'storeBoundaries' },
  });
}
