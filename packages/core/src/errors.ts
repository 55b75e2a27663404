/**
 * Errors thrown by rl. Every error is a {@link RateLimitError} with a stable `code`
 * (codes never change between versions; messages may be improved).
 *
 * A denial is not an error: `consume` returns a decision with `allowed: false`.
 * Errors are for misuse (bad options, bad cost) and for store failures.
 */
export type RateLimitErrorCode =
  | 'RL_INVALID_OPTION'
  | 'RL_INVALID_COST'
  | 'RL_COST_EXCEEDS_CAPACITY'
  | 'RL_INVALID_KEY'
  | 'RL_INVALID_ALGORITHM'
  | 'RL_UNSUPPORTED'
  | 'RL_STORE_ERROR'
  | 'RL_STORE_TIMEOUT'
  | 'RL_STORE_CLOSED'
  | 'RL_RESET_UNCONFIRMED';

/**
 * Where each code is explained, with its fix: `docs/errors.md` on the repository's main branch. A URL,
 * not a path, because the message is read where the package is installed, without the repository.
 */
export const ERRORS_PAGE = 'https://github.com/rl-js/rl/blob/main/docs/errors.md';

/** The link to the section of `code` in the errors page (GitHub's anchor of the heading `## RL_X` is `#rl_x`). */
export function errorDocsUrl(code: string): string {
  return `${ERRORS_PAGE}#${code.toLowerCase()}`;
}

/**
 * The key, in the global symbol registry, of the class names an error of rl carries: its class and
 * each class above it up to {@link RateLimitError} (not enumerable, frozen).
 */
const ERROR_CLASSES: unique symbol = Symbol.for('@rl/core.errorClasses');

/** The names of `target` and of the classes it extends, up to `RateLimitError` included. */
function classNamesOf(target: abstract new (...args: never[]) => unknown): readonly string[] {
  const names: string[] = [];
  for (let at: unknown = target; typeof at === 'function' && at !== Error; at = Object.getPrototypeOf(at))
    names.push(at.name);
  return Object.freeze(names);
}

/**
 * Base class of every error rl throws. Check `code`, not the message. Every message ends with
 * ` See <errors page>#<code>` (after a full stop, added when the text has none), appended here so that no error can leave it out; what comes before it
 * is the error's own text (tests and users may match on its start).
 */
export class RateLimitError extends Error {
  readonly code: RateLimitErrorCode;
  constructor(code: RateLimitErrorCode, message: string, options?: { cause?: unknown }) {
    // A message is a sentence or more; one without its full stop (a store's "connection refused") gets one.
    super(`${/[.!?]$/.test(message) ? message : `${message}.`} See ${errorDocsUrl(code)}`, options);
    this.name = new.target.name;
    this.code = code;
    Object.defineProperty(this, ERROR_CLASSES, { value: classNamesOf(new.target) });
  }

  /**
   * `error instanceof InvalidOptionError` holds for an error of that class made by either build of
   * the package (ESM and CommonJS each carry their own classes, and an app may load both: one
   * dependency `require`s `@rl/core` while the app imports it). Besides the prototype chain, an error
   * is an instance of a class of this family when the class's name is among the names an error of rl
   * carries, under a symbol of the global registry that every copy of the package shares.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (Function.prototype[Symbol.hasInstance].call(this, value)) return true;
    const names =
      typeof value === 'object' && value !== null ? (value as { [ERROR_CLASSES]?: unknown })[ERROR_CLASSES] : undefined;
    return Array.isArray(names) && names.includes(this.name);
  }
}

/**
 * An option given at construction is missing, unknown, or out of range. Thrown synchronously by the
 * factory. Unknown options are reported together: one error naming every one of them (`fields`).
 */
export class InvalidOptionError extends RateLimitError {
  /** Dotted path of the offending option, for example `tokenBucket.capacity`; with several unknown options, the first. */
  readonly field: string;
  /** Every offending option: `[field]`, or each unknown option when several were given. */
  readonly fields: readonly string[];
  /** The value of `field`. */
  readonly value: unknown;
  /**
   * `more.fields`, when given with more than one entry, makes the message name them all (their values
   * are not shown). `more.shown` is what the message calls the value, when rl recognized it (`an
   * ioredis client`, `a token-bucket algorithm`); by default its type (`an object`) or its text.
   */
  constructor(field: string, value: unknown, expected: string, more: InvalidOptionDetails = {}) {
    const fields = more.fields ?? [field];
    const shown = more.shown ?? describeValue(value);
    super(
      'RL_INVALID_OPTION',
      fields.length > 1
        ? `Invalid options ${fields.join(', ')}. Expected ${expected}.`
        : `Invalid option ${field}: ${shown}. Expected ${expected}.`,
    );
    this.field = field;
    this.fields = Object.freeze([...fields]);
    this.value = value;
  }
}

/** What an {@link InvalidOptionError}'s message says beyond its field, value and expectation. */
export interface InvalidOptionDetails {
  /** Every offending option, when several were given (default: the field alone). */
  readonly fields?: readonly string[];
  /** What the message calls the value, when rl recognized it. */
  readonly shown?: string;
}

/** The cost of a request is not a finite positive number. No state was changed. */
export class InvalidCostError extends RateLimitError {
  readonly cost: unknown;
  /** `actual`: the real cost a settle was given (0 allowed: the request cost nothing after all). */
  constructor(cost: unknown, actual = false) {
    super(
      'RL_INVALID_COST',
      actual
        ? `Invalid actual cost ${describeValue(cost)}: the real cost of a request must be a finite number of 0 or more; the estimate it was charged stands.`
        : `Invalid cost ${describeValue(cost)}: the cost of a request must be a finite number greater than 0.`,
    );
    this.cost = cost;
  }
}

/** The cost is larger than the limit could ever admit, so the request could never pass. No state was changed. */
export class CostExceedsCapacityError extends RateLimitError {
  readonly cost: number;
  readonly capacity: number;
  constructor(cost: number, capacity: number, algorithm: string) {
    super(
      'RL_COST_EXCEEDS_CAPACITY',
      `Cost ${cost} is larger than the ${algorithm} capacity ${capacity}: such a request could never be admitted. Raise the capacity or lower the cost.`,
    );
    this.cost = cost;
    this.capacity = capacity;
  }
}

/** The key is not a usable string (empty, or not a string). No state was changed. */
export class InvalidKeyError extends RateLimitError {
  /** `detail` replaces the default explanation, for example when the client IP is unknown. */
  constructor(key: unknown, detail = 'a rate-limit key must be a non-empty string') {
    super('RL_INVALID_KEY', `Invalid key ${describeValue(key)}: ${detail}.`);
  }
}

/**
 * The algorithm given for one call (a limit chosen per request: `algorithm: (req) => plans[req.user.plan]`)
 * is not one this limit can run: not an algorithm, or a concurrency algorithm where a rate algorithm is
 * expected, or a shaping leaky bucket where nothing waits. Thrown (or rejected) per call, before anything
 * is charged; the HTTP adapters pass it to the framework's error handling (500).
 */
export class InvalidAlgorithmError extends RateLimitError {
  constructor(value: unknown, detail: string) {
    super(
      'RL_INVALID_ALGORITHM',
      `Invalid algorithm ${describeValue(value)} for this call: ${detail}. Nothing was charged.`,
    );
  }
}

/** The store cannot run this algorithm or operation. */
export class UnsupportedError extends RateLimitError {
  constructor(message: string) {
    super('RL_UNSUPPORTED', message);
  }
}

/** The store failed (connection lost, script error, ...). `cause` holds the original error. */
export class StoreError extends RateLimitError {
  /**
   * True when the failure is about this key's state, not the store (Redis answered `WRONGTYPE` for a
   * key another program overwrote): the failure policy decides the call and it is reported, but the
   * store-down circuit does not count it, so one bad key never denies every other key.
   */
  readonly keyOnly: boolean;
  constructor(message: string, options?: { cause?: unknown; keyOnly?: boolean }) {
    super('RL_STORE_ERROR', message, options);
    this.keyOnly = options?.keyOnly === true;
  }
}

/** The store did not answer within the limiter's `timeout`. */
export class StoreTimeoutError extends RateLimitError {
  readonly timeoutMs: number;
  constructor(timeoutMs: number) {
    super('RL_STORE_TIMEOUT', `The store did not answer within ${timeoutMs} ms.`);
    this.timeoutMs = timeoutMs;
  }
}

/** The store was closed and can no longer be used. */
export class StoreClosedError extends RateLimitError {
  constructor() {
    super('RL_STORE_CLOSED', 'The store is closed.');
  }
}

/**
 * A reset, a ban or unban, or an override's change was applied in the store, but not every instance
 * that listens to the store's notices confirmed in time that its deny cache forgot the key: until it
 * does (as soon as it reads the notice), such an instance may still deny the key from its cache, for
 * at most the rest of that cached denial. Calling the same operation again is safe (it is idempotent)
 * and confirms it.
 */
export class ResetUnconfirmedError extends RateLimitError {
  /** Instances that received the notice (Redis's count); an instance still connecting is not one. */
  readonly receivers: number;
  /** Instances that confirmed, at most `receivers`. */
  readonly confirmed: number;
  /** How long the store waited for them, in ms (the store's `confirmTimeout`). */
  readonly timeoutMs: number;
  constructor(receivers: number, confirmed: number, timeoutMs: number) {
    super(
      'RL_RESET_UNCONFIRMED',
      `The change was applied in the store, but ${receivers - confirmed} of ${receivers} instances did not confirm within ${timeoutMs} ms that their deny caches forgot the key ` +
        "(an instance that is frozen or overloaded, or a connection subscribed to the store's notices that is not a store): such an instance may deny the key from its cache until it reads the notice. " +
        'Call it again to confirm, or give the store a longer confirmTimeout',
    );
    this.receivers = receivers;
    this.confirmed = confirmed;
    this.timeoutMs = timeoutMs;
  }
}

/** A short, safe rendering of a user-supplied value for error messages. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'symbol') return String(value);
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return 'an array';
  return 'an object';
}
