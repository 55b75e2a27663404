import { describe, expect, it } from 'vitest';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { tokenBucket } from '../algorithms/token-bucket.js';
import { TestStore } from '../testing/test-store.js';
import { hasOwnState, mergeRouteOptions, STATE_OPTIONS, type RouteSetting } from './route-options.js';

const bucket = tokenBucket({ capacity: 100, refillRate: 10 });
const window3 = fixedWindow({ limit: 3, window: '1m' });
const limits = [{ name: 'burst', algorithm: window3 }];
const shared = new TestStore();
const own = new TestStore();
const key = (): string => 'user';

interface Options {
  algorithm?: unknown;
  limits?: unknown;
  prefix?: string | undefined;
  store?: unknown;
  cost?: number;
  key?: unknown;
}

/** Where the route is: under a parent limit whose namespace is `app` (the plugin's, the module's), as `GET /x`. */
const underParent: RouteSetting = { parentPrefix: 'app', route: 'GET /x' };
/** A parent whose limit runs in a default namespace (its options give no prefix). */
const underDefault: RouteSetting = { parentPrefix: 'rl:100-in-10s', route: 'GET /x' };
/** No parent limit that runs (Fastify's `global: false`). */
const noParent: RouteSetting = { parentPrefix: undefined, route: 'GET /x' };

describe('mergeRouteOptions: what a route gets, from its parent options and its own', () => {
  const rows: [what: string, base: Options, over: Options, setting: RouteSetting, route: Options][] = [
    // No state option: the parent's limit, spent.
    [
      'cost only: the parent limit, its namespace',
      { algorithm: bucket, prefix: 'app', store: shared },
      { cost: 5 },
      underParent,
      { algorithm: bucket, prefix: 'app', store: shared, cost: 5 },
    ],
    [
      'cost only, parent in a default namespace: that namespace',
      { algorithm: bucket, store: shared },
      { cost: 5 },
      underDefault,
      { algorithm: bucket, prefix: 'rl:100-in-10s', store: shared, cost: 5 },
    ],
    [
      'key only: the parent limit, keyed by the route',
      { algorithm: bucket, store: shared },
      { key },
      underDefault,
      { algorithm: bucket, prefix: 'rl:100-in-10s', store: shared, key },
    ],
    [
      'cost only, no parent limit: the parent options, their prefix',
      { algorithm: bucket, prefix: 'app', store: shared },
      { cost: 2 },
      noParent,
      { algorithm: bucket, prefix: 'app', store: shared, cost: 2 },
    ],
    [
      'cost only, no parent limit, no prefix: a default namespace',
      { algorithm: bucket, store: shared },
      { cost: 2 },
      noParent,
      { algorithm: bucket, store: shared, cost: 2 },
    ],
    // A state option: state of its own.
    [
      'own algorithm under a prefix: <prefix>:<route>',
      { algorithm: bucket, prefix: 'app', store: shared },
      { algorithm: window3 },
      underParent,
      { algorithm: window3, prefix: 'app:GET /x', store: shared },
    ],
    [
      'own algorithm, no prefix: a default namespace',
      { algorithm: bucket, store: shared },
      { algorithm: window3 },
      underDefault,
      { algorithm: window3, store: shared },
    ],
    [
      'own algorithm, no parent limit: <prefix>:<route>',
      { algorithm: bucket, prefix: 'app', store: shared },
      { algorithm: window3 },
      noParent,
      { algorithm: window3, prefix: 'app:GET /x', store: shared },
    ],
    [
      'own limits replace the parent algorithm',
      { algorithm: bucket, prefix: 'app', store: shared },
      { limits },
      underParent,
      { limits, prefix: 'app:GET /x', store: shared },
    ],
    [
      'own algorithm replaces the parent limits',
      { limits, store: shared },
      { algorithm: window3 },
      underDefault,
      { algorithm: window3, store: shared },
    ],
    [
      'own prefix: that prefix',
      { algorithm: bucket, prefix: 'app', store: shared },
      { prefix: 'login' },
      underParent,
      { algorithm: bucket, prefix: 'login', store: shared },
    ],
    [
      'own store: the parent algorithm on it, <prefix>:<route>',
      { algorithm: bucket, prefix: 'app', store: shared },
      { store: own },
      underParent,
      { algorithm: bucket, prefix: 'app:GET /x', store: own },
    ],
    // Options set to undefined are unset (a spread), and count as not given.
    [
      'key: undefined unsets the parent key',
      { algorithm: bucket, store: shared, key },
      { key: undefined },
      underDefault,
      { algorithm: bucket, prefix: 'rl:100-in-10s', store: shared, key: undefined },
    ],
    [
      'algorithm: undefined is no state option',
      { algorithm: bucket, prefix: 'app', store: shared },
      { algorithm: undefined, cost: 2 },
      underParent,
      { algorithm: undefined, prefix: 'app', store: shared, cost: 2 },
    ],
  ];

  it.each(rows)('%s', (_what, base, over, setting, route) => {
    const before = { base: { ...base }, over: { ...over } };
    const merged = mergeRouteOptions(base, over, setting);
    expect(merged).toStrictEqual(route);
    // A new object; the options given are left as they are.
    expect(merged).not.toBe(base);
    expect({ base, over }).toStrictEqual(before);
  });
});

describe('hasOwnState', () => {
  it.each(STATE_OPTIONS)('is true for %s', (name) => {
    expect(hasOwnState({ [name]: name === 'prefix' ? 'p' : {} })).toBe(true);
  });

  it('is false for other options, and for state options left undefined', () => {
    expect(hasOwnState({ cost: 5, key } as Options)).toBe(false);
    expect(hasOwnState({ algorithm: undefined, prefix: undefined })).toBe(false);
  });
});
