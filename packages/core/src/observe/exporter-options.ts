import { InvalidOptionError } from '../errors.js';
import { checkOptions } from '../options.js';
import { checkBoundaries, DEFAULT_DELAY_BOUNDARIES, DEFAULT_STORE_BOUNDARIES } from './instruments.js';

/** The histograms of `INSTRUMENTS`, whose boundaries an exporter's options may set. */
export type HistogramId = 'delay' | 'storeDuration';

/**
 * What a metrics exporter calls its options, for {@link parseExporterOptions}: the exporters take the
 * same five options (where the metrics go, a prefix, the boundaries of the two histograms under names
 * and grammars of their library, and `storeDurations`).
 */
export interface ExporterOptionSpec<T> {
  /** The exporter's function, the start of every field named by an error: `prometheusObserver`. */
  readonly owner: string;
  /** The required option the metrics go to (`registry`, `meter`), whether a value is one, and what an error says is expected. */
  readonly target: readonly [name: string, accepts: (value: unknown) => value is T, expected: string];
  /** The prefix's default, the grammar of a prefix (the start of every name), and what an error says is expected. */
  readonly prefix: readonly [fallback: string, grammar: RegExp, expected: string];
  /** The option of each histogram's boundaries: `{ delay: 'delayBuckets', storeDuration: 'storeBuckets' }`. */
  readonly boundaries: Readonly<Record<HistogramId, string>>;
}

/** The options every metrics exporter takes under the same name. */
export interface CommonExporterOptions {
  /**
   * Record the store duration histogram (default true). `false` leaves it empty, and saves the
   * limiter's timing of each store call for this observer (two clock reads per decision) and the
   * histogram's update.
   */
  storeDurations?: boolean;
}

/** An exporter's options checked, the defaults filled in. */
export interface ExporterConfig<T> {
  readonly target: T;
  readonly prefix: string;
  /** Seconds, increasing: the option's, else the default of `INSTRUMENTS`. */
  readonly boundaries: Readonly<Record<HistogramId, readonly number[]>>;
  /** Option `storeDurations` (default true): record the store duration histogram (two clock reads per decision). */
  readonly storeDurations: boolean;
}

/**
 * Checks a metrics exporter's options once, at construction. Throws {@link InvalidOptionError}
 * naming the field (`prometheusObserver.delayBuckets`) for an unknown option, a target that is not
 * one, a prefix off the grammar, boundaries that {@link checkBoundaries} refuses, and a
 * `storeDurations` that is not a boolean.
 */
export function parseExporterOptions<T>(options: unknown, spec: ExporterOptionSpec<T>): ExporterConfig<T> {
  const {
    owner,
    target: [targetName, accepts, targetExpected],
    prefix: [fallback, grammar, prefixExpected],
    boundaries: names,
  } = spec;
  const given = checkOptions(
    options,
    [targetName, 'prefix', names.delay, names.storeDuration, 'storeDurations'],
    owner,
  );
  const target = given[targetName];
  if (!accepts(target)) throw new InvalidOptionError(`${owner}.${targetName}`, target, targetExpected);
  const prefix = given.prefix ?? fallback;
  if (typeof prefix !== 'string' || !grammar.test(prefix))
    throw new InvalidOptionError(`${owner}.prefix`, prefix, prefixExpected);
  const delay = checkBoundaries(given[names.delay], `${owner}.${names.delay}`, DEFAULT_DELAY_BOUNDARIES);
  const storeDuration = checkBoundaries(
    given[names.storeDuration],
    `${owner}.${names.storeDuration}`,
    DEFAULT_STORE_BOUNDARIES,
  );
  const storeDurations = given.storeDurations ?? true;
  if (typeof storeDurations !== 'boolean')
    throw new InvalidOptionError(
      `${owner}.storeDurations`,
      storeDurations,
      'true (time every store call, the default) or false (no store duration histogram, no clock reads)',
    );
  return Object.freeze({ target, prefix, boundaries: Object.freeze({ delay, storeDuration }), storeDurations });
}
