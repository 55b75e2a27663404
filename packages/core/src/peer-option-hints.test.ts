import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fixedWindow } from './algorithms/fixed-window.js';
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

const middleware = (options: Record<string, unknown>): unknown => parseHttpOptions({ algorithm, ...options } as never, 'rateLimit', ['onLimit', 'requestWasSuccessful', 'hook', 'global']);
const limiter = (options: Record<string, unknown>): unknown => parseLimiterOptions({ algorithm, store, ...options } as never);

describe.each([
  ['migrating-from-express-rate-limit.md', middleware],
  ['migrating-from-fastify-rate-limit.md', middleware],
  ['migrating-from-koa-ratelimit.md', middleware],
  ['migrating-from-nestjs-throttler.md', middleware],
  ['migrating-from-hono-rate-limiter.md', middleware],
  ['migrating-from-rate-limiter-flexible.md', limiter],
])("%s: every peer option rl does not take is named with its rl equivalent", (guide, parse) => {
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
  ['hono-rate-limiter', ['windowMs', 'limit', 'standardHeaders', 'handler', 'message', 'requestPropertyName', 'binding', 'validations']],
  // @nestjs/throttler's module and throttler options; its blockDuration is rl's.
  ['@nestjs/throttler', ['ttl', 'limit', 'throttlers', 'skipIf', 'getTracker', 'generateKey', 'errorMessage', 'storage', 'ignoreUserAgents', 'setHeaders']],
])('%s: its option names get the rl equivalent', (peer, names) => {
  it.each(names)('%s', (name) => {
    const message = unknownOptionMessage(middleware, name);
    expect(message).toMatch(/no such option \(/);
    expect(message).toContain(peer);
  });

  it('keeps the names every adapter shares as options, not hints', () => {
    for (const name of ['skip', 'store', 'skipFailedRequests', 'skipSuccessfulRequests', 'blockDuration']) expect(unknownOptionMessage(middleware, name)).toBeUndefined();
  });
});

it("a hono-rate-limiter key generator is named with rl's key", () => {
  expect(unknownOptionMessage(middleware, 'keyGenerator')).toContain('Fastify (request)');
});
