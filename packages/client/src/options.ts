import { InvalidOptionError, parseDuration, systemTimers, type Duration, type Timers } from '@rl/core';
import { checkOptions, checkTimers, parseTimerDuration } from '@rl/core/store';
import type { ClientObserver } from './observer.js';
import type { RetryPolicy } from './retry-policy.js';

/** The options of {@link createFetch}. */
export interface CreateFetchOptions {
  /**
   * The fetch to wrap; default the runtime's `globalThis.fetch`, read at creation. Called with each
   * attempt's request and, when the call had any, the runtime's own members of its init (Node's
   * `dispatcher`, Cloudflare's `cf`), which a `Request` does not keep.
   */
  fetch?: (request: Request, init?: RequestInit) => Promise<Response>;
  /** Retries after the first attempt, an integer from 0 to 100; default 3 (at most 4 attempts). */
  retries?: number;
  /** No wait ends later than this after the logical request began; default `'60s'`. */
  maxElapsed?: Duration;
  /** A server's wait longer than this returns its response at once (and caps a pacing wait); default `'30s'`. */
  maxRetryAfter?: Duration;
  /** The spread of the random wait added on top of the server's time (0: none); default `'1s'` (see the README). */
  jitter?: Duration;
  /** The first backoff ceiling when the server names no time, doubled per retry; default `'500ms'`. */
  backoff?: Duration;
  /** `'auto'`: an unsafe request without an `Idempotency-Key` gets one, the same on each of its retries. Default none. */
  idempotencyKey?: 'auto';
  /** Wait before sending where the RateLimit fields said nothing is left; default true. */
  pacing?: boolean;
  /** The pacing scope of a request; default its origin (`https://api.example.com`). */
  scope?: (url: URL) => string;
  /** The timers waits run on; default the system's. `FakeTimers` from `@rl/core/simulation` for a virtual clock. */
  timers?: Timers;
  /** Draws of [0, 1) for the jitter; default `Math.random`. */
  random?: () => number;
  /** Wall-clock milliseconds since the epoch, to read an HTTP-date and a legacy epoch reset; default `Date.now`. */
  clock?: () => number;
  /** Hears the retries, the waits and the paced requests. */
  observer?: ClientObserver;
}

/** The options, checked once. */
export interface ClientConfig {
  readonly fetch: (request: Request, init?: RequestInit) => Promise<Response>;
  readonly policy: RetryPolicy;
  readonly idempotencyKey: (() => string) | undefined;
  readonly pacing: boolean;
  readonly scope: (url: URL) => string;
  readonly timers: Timers;
  readonly random: () => number;
  readonly clock: () => number;
  readonly observer: ClientObserver;
}

const OPTION_NAMES = [
  'fetch',
  'retries',
  'maxElapsed',
  'maxRetryAfter',
  'jitter',
  'backoff',
  'idempotencyKey',
  'pacing',
  'scope',
  'timers',
  'random',
  'clock',
  'observer',
];

/** Hints for the option names of other clients (ky, got, undici) that mean something here under another name. */
const PEER_HINTS: Readonly<Record<string, string>> = {
  limit: "ky's retry limit is `retries` here",
  retry: "ky's and got's retry options are `retries`, `maxRetryAfter`, `maxElapsed` and `jitter` here",
  maxRetries: '`retries` here',
  minTimeout: '`backoff` here',
  maxTimeout: '`maxRetryAfter` here',
  timeout: 'bound the time of all attempts with `maxElapsed`, or give each an AbortSignal',
};

/** `jitter` in ms: `0` in any spelling (`0`, `'0ms'`, `'0s'`) for none, else a duration greater than 0; default 1 s. */
function jitterOption(value: unknown): number {
  if (value === undefined) return 1_000;
  if (value === 0 || (typeof value === 'string' && /^\s*0+(?:\.0+)?\s*(?:ms|s|m|h|d)\s*$/.test(value))) return 0;
  return parseDuration(value, 'jitter');
}

/** Checks `createFetch`'s options once: each bad one is an `InvalidOptionError` naming it and the fix. */
export function parseClientOptions(options: CreateFetchOptions): ClientConfig {
  const o = checkOptions(options, OPTION_NAMES, 'createFetch', PEER_HINTS) as CreateFetchOptions;
  const fetchImpl = o.fetch ?? (globalThis.fetch as ((request: Request) => Promise<Response>) | undefined);
  if (typeof fetchImpl !== 'function')
    throw new InvalidOptionError(
      'fetch',
      o.fetch,
      o.fetch === undefined ? 'a fetch function (this runtime has no globalThis.fetch)' : 'a fetch function',
    );
  const retries = o.retries ?? 3;
  if (typeof retries !== 'number' || !Number.isInteger(retries) || retries < 0 || retries > 100)
    throw new InvalidOptionError('retries', retries, 'an integer from 0 to 100 (0: no retry, pacing only)');
  const maxElapsedMs = parseTimerDuration(o.maxElapsed ?? '60s', 'maxElapsed');
  const maxRetryAfterMs = parseTimerDuration(o.maxRetryAfter ?? '30s', 'maxRetryAfter');
  const jitterMs = jitterOption(o.jitter);
  const backoffMs = parseTimerDuration(o.backoff ?? '500ms', 'backoff');
  return {
    fetch: fetchImpl.bind(globalThis),
    policy: { retries, maxElapsedMs, maxRetryAfterMs, jitterMs, backoffMs },
    idempotencyKey: idempotencyKeyOption(o.idempotencyKey),
    pacing: booleanOption(o.pacing ?? true, 'pacing'),
    scope: functionOption(o.scope, 'scope', 'a function (url: URL) => string') ?? ((url) => url.origin),
    timers: o.timers === undefined ? systemTimers : checkTimers(o.timers, 'timers'),
    random: functionOption(o.random, 'random', 'a function returning a number in [0, 1)') ?? Math.random,
    clock: functionOption(o.clock, 'clock', 'a function returning milliseconds since the epoch') ?? Date.now,
    observer: observerOption(o.observer),
  };
}

/** The key maker of `idempotencyKey: 'auto'`: a UUID as an sf-string (`"…"`), what rl's `idempotencyKeyHeader` reads. */
function idempotencyKeyOption(value: unknown): (() => string) | undefined {
  if (value === undefined) return undefined;
  if (value !== 'auto')
    throw new InvalidOptionError('idempotencyKey', value, "'auto' (or leave it out and set the header yourself)");
  const crypto = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  if (typeof crypto?.randomUUID !== 'function')
    throw new InvalidOptionError(
      'idempotencyKey',
      value,
      'a runtime with crypto.randomUUID() (Node 20, Deno, Bun, browsers)',
    );
  const uuid = crypto!.randomUUID!.bind(crypto);
  return () => `"${uuid()}"`;
}

function booleanOption(value: unknown, field: string): boolean {
  if (typeof value !== 'boolean') throw new InvalidOptionError(field, value, 'true or false');
  return value;
}

function functionOption<F>(value: unknown, field: string, expected: string): F | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') throw new InvalidOptionError(field, value, expected);
  return value as F;
}

function observerOption(value: unknown): ClientObserver {
  if (value === undefined) return {};
  const o = value as Record<string, unknown> | null;
  if (o === null || typeof o !== 'object')
    throw new InvalidOptionError(
      'observer',
      value,
      'an object with onRetry, onPaced and onGiveUp methods (each optional)',
    );
  for (const name of ['onRetry', 'onPaced', 'onGiveUp']) {
    if (o[name] !== undefined && typeof o[name] !== 'function')
      throw new InvalidOptionError(`observer.${name}`, o[name], 'a function, or leave it out');
  }
  return value as ClientObserver;
}
