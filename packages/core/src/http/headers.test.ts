import { describe, expect, it } from 'vitest';
import { makeDecision, makePolicy, type Decision, type DecisionFields, type Policy } from '../decision.js';
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { claimResponse, nodeHeaderAccess, type HeaderAccess } from './header-access.js';
import { MAX_HEADER_INTEGER, retryAfterSeconds, sfString } from './header-values.js';
import { HeaderWriter, parseHeaderFormat, type HeaderFormat, type HeaderSource } from './headers.js';

const perMinute = makePolicy(100, 60_000);
const perSecond = makePolicy(10, 1_000, 'burst');

/**
 * A decision of `policy` (its quota the limit) taken at 0, admitted with nothing to wait, but for the
 * `fields` given: each test names the numbers its headers come from.
 */
function decide(
  policy: Policy,
  fields: Pick<DecisionFields, 'remaining' | 'resetMs'> & Partial<DecisionFields>,
): Decision {
  return makeDecision({ allowed: true, limit: policy.quota, retryAfterMs: 0, delayMs: 0, at: 0, policy, ...fields });
}

const access: HeaderAccess<Map<string, string>> = {
  get: (m, n) => m.get(n.toLowerCase()),
  set: (m, n, v) => void m.set(n.toLowerCase(), v),
};

function source(decisions: (Decision | undefined)[], overrides: Partial<HeaderSource> = {}): HeaderSource {
  return {
    decisions,
    costs: decisions.map(() => 1),
    enforcedDeniedBy: -1,
    rolledBack: false,
    retryAfterSeconds: 0,
    shownBinding: 0,
    ...overrides,
  };
}

const limits = [
  { name: perMinute.name, policy: perMinute },
  { name: 'burst', policy: perSecond },
];

/** Two middlewares on one response, one limit each: the outer one (per minute) and the inner one (burst). */
const outer = new HeaderWriter('draft-8', limits.slice(0, 1));
const inner = new HeaderWriter('draft-8', limits.slice(1));
const admitted = source([decide(perMinute, { remaining: 99, resetMs: 59_001 })]);
const innerAdmitted = source([decide(perSecond, { remaining: 3, resetMs: 700 })]);

describe('HeaderWriter', () => {
  it('writes one draft-8 member per limit, t from resetMs, and appends to another writer', () => {
    const headers = new Map<string, string>([
      ['ratelimit', '"other";r=5;t=9'],
      ['ratelimit-policy', '"other";q=10;w=10'],
    ]);
    new HeaderWriter('draft-8', limits).write(
      access,
      headers,
      source(
        [decide(perMinute, { remaining: 99, resetMs: 59_001 }), decide(perSecond, { remaining: 3, resetMs: 700 })],
        { shownBinding: 1 },
      ),
    );
    expect(headers.get('ratelimit')).toBe('"other";r=5;t=9, "100-in-1m";r=99;t=60, "burst";r=3;t=1');
    expect(headers.get('ratelimit-policy')).toBe('"other";q=10;w=10, "100-in-1m";q=100;w=60, "burst";q=10;w=1');
    expect(headers.has('retry-after')).toBe(false);
  });

  it('gives the denying limit t = Retry-After and reports rolled-back units as remaining', () => {
    const headers = new Map<string, string>();
    new HeaderWriter('draft-8', limits).write(
      access,
      headers,
      source(
        [
          decide(perMinute, { remaining: 97, resetMs: 30_000 }),
          decide(perSecond, { allowed: false, remaining: 0, resetMs: 1_000, retryAfterMs: 2_001 }),
        ],
        { enforcedDeniedBy: 1, shownBinding: 1, rolledBack: true, retryAfterSeconds: 3, costs: [2, 2] },
      ),
    );
    expect(headers.get('ratelimit')).toBe('"100-in-1m";r=99;t=30, "burst";r=0;t=3');
    expect(headers.get('retry-after')).toBe('3');
  });

  it('keeps the most restrictive limit in the single-limit formats', () => {
    const headers = new Map<string, string>();
    const writer = new HeaderWriter('draft-7', limits.slice(0, 1));
    writer.write(access, headers, source([decide(perMinute, { remaining: 5, resetMs: 10_000 })]));
    writer.write(access, headers, source([decide(perMinute, { remaining: 50, resetMs: 10_000 })]));
    expect(headers.get('ratelimit')).toBe('limit=100, remaining=5, reset=10');
    expect(headers.get('ratelimit-policy')).toBe('100;w=60, 100;w=60');
  });

  it('leaves out a limit admitted by a fail-open policy', () => {
    const headers = new Map<string, string>();
    const failOpen = {
      ...decide(perMinute, { remaining: 99, resetMs: 0 }),
      reason: 'store-error' as const,
    };
    new HeaderWriter('draft-8', limits.slice(0, 1)).write(access, headers, source([failOpen]));
    expect(headers.has('ratelimit')).toBe(false);
    expect(headers.get('ratelimit-policy')).toBe('"100-in-1m";q=100;w=60');
  });
});

describe('HeaderWriter with claim (one response, several rl middlewares)', () => {
  const reads: string[] = [];
  const claiming: HeaderAccess<Map<string, string>> = {
    ...access,
    get: (m, n) => (reads.push(n), m.get(n.toLowerCase())),
    claim: claimResponse,
  };

  it('sets the headers of the first writer without reading them back, and combines the later ones', () => {
    reads.length = 0;
    const headers = new Map<string, string>();
    outer.write(claiming, headers, admitted);
    expect(reads).toEqual([]);
    inner.write(claiming, headers, innerAdmitted);
    expect(headers.get('ratelimit')).toBe('"100-in-1m";r=99;t=60, "burst";r=3;t=1');
    expect(headers.get('ratelimit-policy')).toBe('"100-in-1m";q=100;w=60, "burst";q=10;w=1');
    expect(reads.length).toBeGreaterThan(0);
  });

  it('keeps the most restrictive limit in the single-limit formats', () => {
    const headers = new Map<string, string>();
    const writer = new HeaderWriter('draft-6', limits.slice(0, 1));
    writer.write(claiming, headers, source([decide(perMinute, { remaining: 50, resetMs: 10_000 })]));
    writer.write(claiming, headers, source([decide(perMinute, { remaining: 5, resetMs: 10_000 })]));
    writer.write(claiming, headers, source([decide(perMinute, { remaining: 70, resetMs: 10_000 })]));
    expect(headers.get('ratelimit-remaining')).toBe('5');
    expect(claimResponse(headers)).toBe(false);
  });
});

describe('HeaderWriter.writeBeneath (a Fetch middleware writes on the response of those inside it)', () => {
  const innerDenied = source([decide(perSecond, { allowed: false, remaining: 4, resetMs: 700, retryAfterMs: 2_000 })], {
    enforcedDeniedBy: 0,
    retryAfterSeconds: 2,
  });

  /** The headers of `outer` then `inner` written in the order a Node response takes them (outer first), and beneath (inner first). */
  function bothWays(
    formats: readonly [HeaderFormat, HeaderFormat],
    sources: readonly [HeaderSource, HeaderSource],
    outerLimit = limits.slice(0, 1),
    innerLimit = limits.slice(1),
  ) {
    const [outerWriter, innerWriter] = [
      new HeaderWriter(formats[0], outerLimit, () => 0),
      new HeaderWriter(formats[1], innerLimit, () => 0),
    ];
    const inOrder = new Map<string, string>();
    outerWriter.write(access, inOrder, sources[0], true);
    innerWriter.write(access, inOrder, sources[1], false);
    const beneath = new Map<string, string>();
    innerWriter.writeBeneath(access, beneath, sources[1]);
    outerWriter.writeBeneath(access, beneath, sources[0]);
    return { inOrder: Object.fromEntries(inOrder), beneath: Object.fromEntries(beneath) };
  }

  it('puts the outer members first, as writing the outer one first does', () => {
    const headers = new Map<string, string>();
    inner.writeBeneath(access, headers, innerAdmitted);
    outer.writeBeneath(access, headers, admitted);
    expect(headers.get('ratelimit')).toBe('"100-in-1m";r=99;t=60, "burst";r=3;t=1');
    expect(headers.get('ratelimit-policy')).toBe('"100-in-1m";q=100;w=60, "burst";q=10;w=1');
  });

  it.each(['draft-8', 'draft-7', 'draft-6', 'legacy'] as const)(
    '%s: the same headers as the outer one written first, the inner one admitted or denying',
    (format) => {
      const perMinuteOnly = limits.slice(0, 1);
      // The inner limit with more remaining, fewer, the same, and denying with units left (a cost above them).
      for (const innerSource of [
        source([decide(perMinute, { remaining: 50, resetMs: 10_000 })]),
        source([decide(perMinute, { remaining: 5, resetMs: 20_000 })]),
        source([decide(perMinute, { remaining: 70, resetMs: 30_000 })]),
        source([decide(perMinute, { allowed: false, remaining: 80, resetMs: 30_000, retryAfterMs: 4_000 })], {
          enforcedDeniedBy: 0,
          retryAfterSeconds: 4,
        }),
      ]) {
        const { inOrder, beneath } = bothWays(
          [format, format],
          [source([decide(perMinute, { remaining: 70, resetMs: 10_000 })]), innerSource],
          perMinuteOnly,
          perMinuteOnly,
        );
        expect(beneath).toEqual(inOrder);
      }
    },
  );

  it('writes a denial, or on a response no rl writer wrote on, as the first writer: set, nothing of an earlier value kept', () => {
    const denial = new Map<string, string>([['ratelimit', '"upstream";r=1;t=1']]);
    inner.writeBeneath(access, denial, innerDenied);
    expect(denial.get('ratelimit')).toBe('"burst";r=4;t=2');
    expect(denial.get('retry-after')).toBe('2');
    const { inOrder, beneath } = bothWays(['draft-8', 'draft-8'], [admitted, innerDenied]);
    expect(beneath).toEqual(inOrder);
  });
});

describe('nodeHeaderAccess', () => {
  it('combines two writers on one ServerResponse, the first without reading back', () => {
    const res = new ServerResponse(new IncomingMessage(new Socket()));
    const reads: string[] = [];
    const getHeader = res.getHeader.bind(res);
    res.getHeader = (name: string) => (reads.push(name), getHeader(name));
    outer.write(nodeHeaderAccess, res, admitted);
    expect(reads).toEqual([]);
    inner.write(nodeHeaderAccess, res, innerAdmitted);
    expect(res.getHeader('ratelimit')).toBe('"100-in-1m";r=99;t=60, "burst";r=3;t=1');
    expect(res.getHeader('ratelimit-policy')).toBe('"100-in-1m";q=100;w=60, "burst";q=10;w=1');
  });
});

describe('parseHeaderFormat and sfString', () => {
  it('maps drafts 8 to 11 to one format and rejects unknown ones', () => {
    expect(parseHeaderFormat(undefined, 'h')).toBe('draft-8');
    expect(parseHeaderFormat('draft-11', 'h')).toBe('draft-8');
    expect(parseHeaderFormat(false, 'h')).toBe(false);
    expect(() => parseHeaderFormat('draft-5', 'h')).toThrowError(/Invalid option h/);
  });
  it('escapes quotes and backslashes, refuses non-ASCII', () => {
    expect(sfString('a"b\\c')).toBe('"a\\"b\\\\c"');
    expect(() => sfString('é')).toThrowError();
  });
});

describe('HeaderWriter wall clock', () => {
  it('takes the legacy absolute reset from the wall clock it is given', () => {
    const headers = new Map<string, string>();
    new HeaderWriter('legacy', limits, () => 1_000_000).write(
      access,
      headers,
      source([decide(perMinute, { remaining: 99, resetMs: 59_001 })]),
    );
    expect(headers.get('x-ratelimit-reset')).toBe(String(Math.ceil((1_000_000 + 59_001) / 1000)));
  });

  // A fixed window of a minute from 1_800_000_000_000 (a whole second): every request in it resets at
  // 1_800_000_060. The decision is taken at `at` (the store's Date.now() or Redis TIME); the header
  // is written a few ms later, by a wall clock that has moved on since: the reset must not move with it.
  it("legacy: X-RateLimit-Reset is the same for every request of one window, the decision's instant, however late the headers are written", () => {
    const windowEnd = 1_800_000_060_000;
    let wall = 0;
    const writer = new HeaderWriter('legacy', limits, () => wall);
    const resets = new Set<string>();
    for (const at of [1_800_000_000_000, 1_800_000_000_999, 1_800_000_012_345.5, 1_800_000_059_999]) {
      for (const lateBy of [0, 1, 7, 250]) {
        wall = at + lateBy;
        const headers = new Map<string, string>();
        // resetMs as a step returns it: rounded up to a whole ms after `at`.
        writer.write(
          access,
          headers,
          source([decide(perMinute, { remaining: 50, resetMs: Math.ceil(windowEnd - at), at })]),
        );
        resets.add(headers.get('x-ratelimit-reset')!);
      }
    }
    expect([...resets]).toEqual(['1800000060']);
  });

  it('legacy: a denial resets at the decision plus Retry-After, whatever the wall clock says by the time of writing', () => {
    const at = 1_800_000_010_000;
    const headers = new Map<string, string>();
    new HeaderWriter('legacy', limits, () => at + 900).write(
      access,
      headers,
      source([decide(perMinute, { allowed: false, remaining: 0, resetMs: 50_000, retryAfterMs: 50_000, at })], {
        enforcedDeniedBy: 0,
        retryAfterSeconds: 50,
      }),
    );
    expect(headers.get('retry-after')).toBe('50');
    expect(headers.get('x-ratelimit-reset')).toBe('1800000060');
  });
});

describe('every number in a header is an integer of at most 15 digits', () => {
  const MAX = String(MAX_HEADER_INTEGER);
  // A policy and decisions no option can produce (a custom store or algorithm could): each number is
  // written as the nearest representable one; one that is not a number at all as the restrictive end.
  const huge = { name: 'huge', policy: { name: 'huge', quota: 1e20, windowSeconds: Infinity } };
  const odd = { name: 'odd', policy: { name: 'odd', quota: Number.NaN, windowSeconds: Number.NaN } };
  const decision = (allowed: boolean, remaining: number, resetMs: number, retryAfterMs = 0): Decision =>
    makeDecision({ allowed, limit: 1e20, remaining, resetMs, retryAfterMs, delayMs: 0, policy: huge.policy, at: 0 });

  it.each([
    // [label, remaining, resetMs, r, t]
    ['NaN', Number.NaN, Number.NaN, '0', MAX],
    ['Infinity', Infinity, Infinity, MAX, MAX],
    ['-Infinity', -Infinity, -Infinity, '0', '0'],
    ['1e20 and 1e308', 1e20, 1e308, MAX, MAX],
    ['below zero', -5, -1, '0', '0'],
    ['the largest exact values', MAX_HEADER_INTEGER, MAX_HEADER_INTEGER * 1000, MAX, MAX],
    ['a value below one unit', 1e-7, 1, '0', '1'],
    ['a fractional count (a custom store)', 2.5, 1000, '2', '1'],
  ] as const)('an admitted request: %s', (_label, remaining, resetMs, r, t) => {
    const headers = new Map<string, string>();
    new HeaderWriter('draft-8', [huge]).write(access, headers, source([decision(true, remaining, resetMs)]));
    expect(headers.get('ratelimit')).toBe(`"huge";r=${r};t=${t}`);
    expect(headers.get('ratelimit-policy')).toBe(`"huge";q=${MAX};w=${MAX}`);
  });

  it.each([
    ['NaN', Number.NaN, MAX],
    ['Infinity', Infinity, MAX],
    ['1e305', 1e305, MAX],
    ['0', 0, '1'],
    ['0.25', 0.25, '1'],
  ] as const)('a denial whose Retry-After is %s', (_label, seconds, expected) => {
    const headers = new Map<string, string>();
    new HeaderWriter('draft-8', [huge]).write(
      access,
      headers,
      source([decision(false, 0, Infinity, Infinity)], { enforcedDeniedBy: 0, retryAfterSeconds: seconds }),
    );
    expect(headers.get('retry-after')).toBe(expected);
    expect(headers.get('ratelimit')).toBe(`"huge";r=0;t=${expected}`);
  });

  it.each(['draft-8', 'draft-7', 'draft-6', 'legacy'] as const)(
    '%s: no NaN, Infinity, exponent or 16-digit number',
    (format: HeaderFormat) => {
      for (const limit of [huge, odd]) {
        for (const [remaining, resetMs, seconds] of [
          [Number.NaN, Number.NaN, Number.NaN],
          [Infinity, Infinity, Infinity],
          [1e21, 1e300, 1e21],
        ]) {
          for (const denied of [false, true]) {
            const headers = new Map<string, string>();
            const wallClock = (): number => 1_800_000_000_000;
            const d = makeDecision({
              allowed: !denied,
              limit: limit.policy.quota,
              remaining: remaining!,
              resetMs: resetMs!,
              retryAfterMs: denied ? resetMs! : 0,
              delayMs: 0,
              policy: limit.policy,
              at: 0,
            });
            new HeaderWriter(format, [limit], wallClock).write(
              access,
              headers,
              source([d], denied ? { enforcedDeniedBy: 0, retryAfterSeconds: seconds! } : {}),
            );
            expect(headers.size).toBeGreaterThan(0);
            for (const value of headers.values()) {
              expect(value).not.toMatch(/NaN|Infinity|e\+|e-|\d{16}|\./);
            }
          }
        }
      }
    },
  );

  it('Retry-After and the problem body take whole seconds from 1 to 15 digits, for any retry time', () => {
    expect(retryAfterSeconds(0)).toBe(1);
    expect(retryAfterSeconds(-1)).toBe(1);
    expect(retryAfterSeconds(1000)).toBe(1);
    expect(retryAfterSeconds(1001)).toBe(2);
    expect(retryAfterSeconds(MAX_HEADER_INTEGER * 1000)).toBe(MAX_HEADER_INTEGER);
    expect(retryAfterSeconds(MAX_HEADER_INTEGER * 1000 + 1000)).toBe(MAX_HEADER_INTEGER);
    expect(retryAfterSeconds(Infinity)).toBe(MAX_HEADER_INTEGER);
    expect(retryAfterSeconds(Number.NaN)).toBe(MAX_HEADER_INTEGER);
  });
});
