import { ALGORITHM_FACTORIES } from '@rl/core';
import { withBlock, withOverrides, type Algorithm } from '@rl/core/store';

/**
 * The version of the wire: every message carries it as `rl`. A holder answers a call of another
 * version with an error (`RL_CLUSTER_WIRE`), so a worker and a holder of two releases that do not
 * speak alike fail their calls (the limiter's failure policy answers) instead of misreading them.
 */
export const WIRE_VERSION = 1;

/**
 * The verbs a worker sends, each a `Store` method the holder runs on its memory store, with the
 * arguments after the call's id and verb, in this order (an algorithm as a {@link WireAlgorithm}, a
 * `now` as a number or null for the holder's clock):
 *
 * | verb            | arguments                                  | answer                        |
 * | --------------- | ------------------------------------------ | ----------------------------- |
 * | `charge`        | charge, now                                | `Charged`                     |
 * | `chargeAll`     | charges (each `[charge, now]`), holdMs     | `Charged` or error, per charge |
 * | `peek`          | key, algorithm, cost, now                  | `Decision`                    |
 * | `giveBack`      | give-back, now                             | null                          |
 * | `settle`        | key, algorithm, settlement, now            | null                          |
 * | `ban`           | key, algorithm, durationMs, now            | null                          |
 * | `unban`         | key, algorithm                             | null                          |
 * | `setOverride`   | key, override, ttlMs, now                  | null                          |
 * | `getOverride`   | key, algorithm, now                        | `{ algorithm, expiresAt }` or null |
 * | `clearOverride` | key, algorithm                             | null                          |
 * | `reset`         | key, algorithm                             | null                          |
 * | `acquire`       | key, algorithm, leaseId, now               | `Decision`                    |
 * | `release`       | key, algorithm, leaseId                    | null                          |
 *
 * A charge and a give-back are their records (`Charge`, `GiveBack`) with the algorithm as a
 * {@link WireAlgorithm}.
 */
export const VERBS = [
  'charge',
  'chargeAll',
  'peek',
  'giveBack',
  'settle',
  'ban',
  'unban',
  'setOverride',
  'getOverride',
  'clearOverride',
  'reset',
  'acquire',
  'release',
] as const;
export type Verb = (typeof VERBS)[number];

/**
 * The messages, each one JSON text (see {@link encode}):
 * - worker → holder, {@link CallsMessage}: `{ rl, from, calls: [[id, verb, ...arguments], …] }`, the
 *   calls a worker's store made in one turn of its event loop, `from` the store's own tag (several
 *   stores of one worker share its channel, each numbering its calls from 1);
 * - holder → worker, {@link AnswersMessage}: `{ rl, to, answers: [[id, 1, value] | [id, 0, error], …] }`,
 *   one answer per call of a calls message, in one message, `to` the tag the calls came `from`: a store
 *   reads only the answers to it; a `chargeAll` answers with one such entry per charge in its value;
 * - holder → worker, {@link NoticeMessage}: `{ rl, reset: key | null }`, a key reset, banned, unbanned
 *   or overridden by any worker (null: forget every key), sent before the answer to the call that did it.
 */
export interface CallsMessage {
  readonly rl: number;
  /** The calling store's tag (see above); absent where the channel pairs each answer with its message (an HTTP request to a Durable Object). */
  readonly from?: string;
  readonly calls: readonly (readonly unknown[])[];
}
export type Answer = readonly [id: number, ok: 1, value: unknown] | readonly [id: number, ok: 0, error: WireError];
export interface AnswersMessage {
  readonly rl: number;
  /** The `from` of the calls answered (absent when they had none: the message then answers no store). */
  readonly to: string | undefined;
  readonly answers: readonly Answer[];
}
export interface NoticeMessage {
  readonly rl: number;
  readonly reset: string | null;
}

/** An error as it crosses the wire: its code (`RL_…`) when it has one, and its message. */
export interface WireError {
  readonly code: string;
  readonly message: string;
}

/**
 * An algorithm as it crosses the wire: its kind and normalised options (made again on the holder by
 * the kind's factory, as the Redis store makes an override again), its lockout, and whether it
 * checks bans and overrides. Only the algorithms of `ALGORITHM_FACTORIES` cross; another is refused
 * with `RL_CLUSTER_WIRE` on the holder.
 */
export interface WireAlgorithm {
  readonly kind: string;
  readonly options: Readonly<Record<string, unknown>>;
  readonly blockMs: number;
  readonly checksBlocks: boolean;
  readonly checksOverrides: boolean;
}

/** The wire form of `algorithm` (its options without the lockout, which `blockMs` carries). */
export function wireAlgorithm(algorithm: Algorithm): WireAlgorithm {
  const { blockDuration: _, ...options } = algorithm.options;
  return {
    kind: algorithm.kind,
    options,
    blockMs: algorithm.blockMs,
    checksBlocks: algorithm.checksBlocks,
    checksOverrides: algorithm.checksOverrides === true,
  };
}

/** A value refused by the holder: the call is answered with it as an `RL_CLUSTER_WIRE` error. */
export class WireRefusal extends Error {
  readonly code = 'RL_CLUSTER_WIRE';
}

/** Throws a {@link WireRefusal} saying what `field` should have been. */
export function refuse(field: string, expected: string): never {
  throw new WireRefusal(`rl cluster wire: ${field} must be ${expected}`);
}

/** The most algorithms a holder keeps made (by their wire text); past it, it starts again. */
const MAX_ALGORITHMS = 4096;

/** Makes algorithms again from their wire form, each once per distinct text (bounded). */
export class AlgorithmCache {
  private readonly made = new Map<string, Algorithm>();

  /** The algorithm of `value` (a {@link WireAlgorithm}), or a {@link WireRefusal} naming `field`. */
  algorithm(value: unknown, field: string): Algorithm {
    if (typeof value !== 'object' || value === null) refuse(field, 'an algorithm');
    const text = JSON.stringify(value);
    const found = this.made.get(text);
    if (found !== undefined) return found;
    const wire = value as Partial<WireAlgorithm>;
    const factoryName = (typeof wire.kind === 'string' ? wire.kind : '').replace(/-([a-z])/g, (_, c: string) =>
      c.toUpperCase(),
    );
    if (!Object.hasOwn(ALGORITHM_FACTORIES, factoryName)) refuse(`${field}.kind`, 'a kind of ALGORITHM_FACTORIES');
    if (typeof wire.options !== 'object' || wire.options === null) refuse(`${field}.options`, 'an object');
    if (typeof wire.blockMs !== 'number' || !(wire.blockMs >= 0)) refuse(`${field}.blockMs`, 'a number >= 0');
    const factory = ALGORITHM_FACTORIES[factoryName as keyof typeof ALGORITHM_FACTORIES] as unknown as (
      options: unknown,
    ) => Algorithm;
    let algorithm: Algorithm;
    try {
      algorithm = factory(wire.options);
      if (wire.blockMs > 0 || wire.checksBlocks === true)
        algorithm = withBlock(algorithm, wire.blockMs, 'blockDuration', wire.checksBlocks === true);
      if (wire.checksOverrides === true) algorithm = withOverrides(algorithm);
    } catch (error) {
      refuse(field, `an algorithm its factory accepts (${error instanceof Error ? error.message : String(error)})`);
    }
    if (this.made.size >= MAX_ALGORITHMS) this.made.clear();
    this.made.set(text, algorithm);
    return algorithm;
  }
}

/**
 * JSON text of a message. Numbers JSON cannot hold (`Infinity`, `-Infinity`, `NaN`: an unbounded
 * hold, a limit's `retryAfterMs`) travel as `{ "#": "Infinity" }`, read back by {@link decode}.
 */
export function encode(message: CallsMessage | AnswersMessage | NoticeMessage): string {
  return JSON.stringify(message, numbers);
}

/** The message of JSON text `text`, or undefined when it is not JSON of an object with `rl`. */
export function decode(text: unknown): { readonly rl: unknown; readonly [field: string]: unknown } | undefined {
  if (typeof text !== 'string') return undefined;
  try {
    const value = JSON.parse(text, revive) as unknown;
    return typeof value === 'object' && value !== null && 'rl' in value ? (value as { rl: unknown }) : undefined;
  } catch {
    return undefined;
  }
}

function numbers(_key: string, value: unknown): unknown {
  return typeof value === 'number' && !Number.isFinite(value) ? { '#': String(value) } : value;
}

function revive(_key: string, value: unknown): unknown {
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const mark = (value as { '#'?: unknown })['#'];
    if (typeof mark === 'string' && Object.keys(value).length === 1) return Number(mark);
  }
  return value;
}
