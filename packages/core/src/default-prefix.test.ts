import { describe, expect, it } from 'vitest';
import { tokenBucket } from './index.js';
import { DEFAULT_PREFIX_CODE } from './default-prefix.js';
import { parseHttpOptions } from './http/options.js';
import { createLimiter } from './limiter/index.js';
import { StepStore } from './testing/step-store.js';
import { TestStore } from './testing/test-store.js';
import { warningsOf } from './testing/capture.js';

/** A store another process shares (capabilities.local false), as Redis is. */
const remote = () => new TestStore({ answers: 'async' });

// The warning is once per process per default namespace: each test names its limits apart.
describe('RL_DEFAULT_PREFIX: a limit on a shared (remote) store without a prefix of its own', () => {
  it('rateLimit on a remote store without prefix warns once per default namespace, naming it and the fix', () => {
    const messages = warningsOf(DEFAULT_PREFIX_CODE, () => {
      for (let i = 0; i < 3; i++)
        parseHttpOptions(
          {
            limits: [{ name: 'api', algorithm: tokenBucket({ capacity: 20, refillRate: 10 }) }],
            store: remote(),
          } as never,
          'rateLimit',
          [],
        );
    });
    expect(messages).toEqual([
      'rateLimit keeps its counts in a shared store under the default prefix "rl:api": every app on the same Redis with the same default shares them, and their denials. ' +
        "Give each app (and each limit) a prefix of its own: rateLimit({ …, prefix: 'my-app' }). The instances of one app share a limit by sharing its prefix.",
    ]);
  });

  it("a limit's own remote store counts too", () => {
    const messages = warningsOf(DEFAULT_PREFIX_CODE, () => {
      parseHttpOptions(
        {
          limits: [{ name: 'own-store', algorithm: tokenBucket({ capacity: 20, refillRate: 10 }), store: remote() }],
        } as never,
        'rateLimit',
        [],
      );
    });
    expect(messages).toHaveLength(1);
    expect(messages[0]).toContain('"rl:own-store"');
  });

  it('createLimiter on a remote store without prefix warns (its keys as given)', () => {
    const messages = warningsOf(DEFAULT_PREFIX_CODE, () => {
      createLimiter({ algorithm: tokenBucket({ capacity: 20, refillRate: 10 }), store: remote() });
    });
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatch(
      /^createLimiter keeps its counts in a shared store with no prefix \(its keys as given\)/,
    );
  });

  it('no warning with a prefix, or on a memory store (never shared)', () => {
    const messages = warningsOf(DEFAULT_PREFIX_CODE, () => {
      parseHttpOptions(
        {
          limits: [{ name: 'prefixed', algorithm: tokenBucket({ capacity: 20, refillRate: 10 }) }],
          store: remote(),
          prefix: 'my-app',
        } as never,
        'rateLimit',
        [],
      );
      parseHttpOptions(
        {
          limits: [{ name: 'local', algorithm: tokenBucket({ capacity: 20, refillRate: 10 }) }],
          store: new StepStore(),
        } as never,
        'rateLimit',
        [],
      );
      parseHttpOptions(
        { limits: [{ name: 'default-store', algorithm: tokenBucket({ capacity: 20, refillRate: 10 }) }] } as never,
        'rateLimit',
        [],
      );
      createLimiter({ algorithm: tokenBucket({ capacity: 20, refillRate: 10 }), store: remote(), prefix: 'my-app' });
      createLimiter({ algorithm: tokenBucket({ capacity: 20, refillRate: 10 }), store: new StepStore() });
    });
    expect(messages).toEqual([]);
  });
});
