import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fixedWindow } from './algorithms/fixed-window.js';
import { leakyBucket, slidingWindowLog, tokenBucket } from './index.js';
import { InvalidOptionError } from './errors.js';
import { parseHttpOptions } from './http/options.js';
import { parseLimiterOptions } from './limiter/options.js';
import { TestStore } from './testing/test-store.js';

/**
 * The migration guides say that passing a peer's option to rl is an error naming the rl equivalent.
 * This holds them to it: every option name in the first column of a guide's "Option by option" table
 * that rl does not take is rejected with a hint (`no such option (…)`), not a bare "no such option".
 */
const algorithm = fixedWindow({ limit: 5, window: '1m' });
const store = new TestStore();

/** Option names (backticked identifiers) in the first column of the guide's option table, per row. */
function peerOptionNames(guide: string): string[] {
  const text = readFileSync(new URL(`../../../docs/${guide}`, import.meta.url), 'utf8');
  const table = text.slice(text.indexOf('## Option by option'), text.indexOf('## Behavioural differences'));
  const names = new Set<string>();
  for (const line of table.split('\n')) {
    // A note in parentheses (`limit` (a function of `c`)) names no option.
    const first = line.startsWith('| `') ? line.split('|')[1]!.replace(/ \([^)]*\)/g, '') : '';
    // A row about a method or a class (`resetKey(key)`, `RateLimiterUnion`) names no option.
    if (!/^ `[a-z][A-Za-z]*`/.test(first)) continue;
    for (const [, name] of first.matchAll(/`([a-z][A-Za-z]*)`/g)) names.add(name!);
  }
  return [...names];
}

/** The message for `name` set to 1, or undefined when the option is accepted or rejected for its value. */
function unknownOptionMessage(parse: (options: Record<string, unknown>) => unknown, name: string): string | undefined {
  try {
    parse({ [name]: 1 });
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidOptionError);
    const message = (error as InvalidOptionError).message;
    return message.includes('no such option') ? message : undefined;
  }
  return undefined;
}

const middleware = (options: Record<string, unknown>): unknown =>
  parseHttpOptions({ algorithm, ...options } as never, 'rateLimit', [
    'onLimit',
    'requestWasSuccessful',
    'hook',
    'global',
  ]);
const limiter = (options: Record<string, unknown>): unknown =>
  parseLimiterOptions({ algorithm, store, ...options } as never);

describe.each([
  ['migrating-from-express-rate-limit.md', middleware],
  ['migrating-from-fastify-rate-limit.md', middleware],
  ['migrating-from-koa-ratelimit.md', middleware],
  ['migrating-from-nestjs-throttler.md', middleware],
  ['migrating-from-hono-rate-limiter.md', middleware],
  ['migrating-from-rate-limiter-flexible.md', limiter],
])('%s: every peer option rl does not take is named with its rl equivalent', (guide, parse) => {
  const names = peerOptionNames(guide);

  it('lists options', () => {
    expect(names.length).toBeGreaterThan(8);
  });

  it.each(names)('%s', (name) => {
    const message = unknownOptionMessage(parse, name);
    if (message !== undefined) expect(message).toMatch(new RegExp(`no such option \\(`));
  });
});

/** The options of peers without a guide here, each with the peer's name in its hint (the guide's table test covers the others). */
describe.each([
  // hono-rate-limiter's options (rateLimiter({ ... })) that rl does not take; skip, store and the skip*Requests are rl's too.
  [
    'hono-rate-limiter',
    ['windowMs', 'limit', 'standardHeaders', 'handler', 'message', 'requestPropertyName', 'binding', 'validations'],
  ],
  // @nestjs/throttler's module and throttler options; its blockDuration is rl's.
  [
    '@nestjs/throttler',
    [
      'ttl',
      'limit',
      'throttlers',
      'skipIf',
      'getTracker',
      'generateKey',
      'errorMessage',
      'storage',
      'ignoreUserAgents',
      'setHeaders',
    ],
  ],
])('%s: its option names get the rl equivalent', (peer, names) => {
  it.each(names)('%s', (name) => {
    const message = unknownOptionMessage(middleware, name);
    expect(message).toMatch(/no such option \(/);
    expect(message).toContain(peer);
  });

  it('keeps the names every adapter shares as options, not hints', () => {
    for (const name of ['skip', 'store', 'skipFailedRequests', 'skipSuccessfulRequests', 'blockDuration'])
      expect(unknownOptionMessage(middleware, name)).toBeUndefined();
  });
});

it("a hono-rate-limiter key generator is named with rl's key", () => {
  expect(unknownOptionMessage(middleware, 'keyGenerator')).toContain('Fastify (request)');
});

/** The message `build` throws, an InvalidOptionError's. */
function thrown(build: () => unknown): string {
  try {
    build();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidOptionError);
    return (error as InvalidOptionError).message;
  }
  throw new Error('accepted');
}

describe("a peer's names inside rl's algorithm (fixedWindow({ windowMs })): use rl's name instead", () => {
  it.each([
    ['windowMs', "no such option (express-rate-limit's and hono-rate-limiter's name: use window"],
    ['max', "no such option (express-rate-limit's and koa-ratelimit's count: use limit)"],
    ['ttl', "no such option (@nestjs/throttler's name: use window"],
    ['timeWindow', "no such option (@fastify/rate-limit's name: use window"],
    ['duration', 'window: duration * 1000'],
    ['points', "no such option (rate-limiter-flexible's points: use limit)"],
    ['blockDuration', 'give blockDuration beside algorithm'],
  ])('fixedWindow({ %s })', (name, hint) => {
    const message = thrown(() => fixedWindow({ limit: 5, window: '1m', [name]: 60_000 } as never));
    expect(message).toMatch(new RegExp(`^Invalid option fixedWindow\\.${name}: `));
    expect(message).toContain(hint);
  });

  it("fixedWindow({ windowMs, max }), the whole of express-rate-limit's options: both named in one error", () => {
    const message = thrown(() => fixedWindow({ windowMs: 60_000, max: 5 } as never));
    expect(message).toContain('no such options: windowMs (express-rate-limit');
    expect(message).toContain('max (express-rate-limit');
  });

  it('every window algorithm, and the buckets with their own names', () => {
    expect(thrown(() => slidingWindowLog({ limit: 5, windowMs: 1000 } as never))).toContain('use window');
    expect(thrown(() => slidingWindowLog({ limit: 5, ttl: 1000 } as never))).toContain('use window');
    expect(thrown(() => tokenBucket({ capacity: 5, refillRate: 1, points: 5 } as never))).toContain(
      "rate-limiter-flexible's points: use capacity (the burst), with refillRate per interval",
    );
    expect(thrown(() => leakyBucket({ capacity: 5, leakRate: 1, refillRate: 1 } as never))).toContain(
      "tokenBucket's rate: leakyBucket's is leakRate",
    );
    expect(thrown(() => tokenBucket({ capacity: 5, refillRate: 1, window: '1m' } as never))).toContain(
      'a bucket has no window: refillRate units per interval',
    );
  });
});
