import { describe, expect, it } from 'vitest';
import { makeDecision, makePolicy, type Decision } from '../decision.js';
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { HeaderWriter, claimResponse, nodeHeaderAccess, parseHeaderFormat, sfString, type HeaderAccess, type HeaderSource } from './headers.js';

const perMinute = makePolicy(100, 60_000);
const perSecond = makePolicy(10, 1_000, 'burst');

const access: HeaderAccess<Map<string, string>> = { get: (m, n) => m.get(n.toLowerCase()), set: (m, n, v) => void m.set(n.toLowerCase(), v) };

function source(decisions: (Decision | undefined)[], overrides: Partial<HeaderSource> = {}): HeaderSource {
  return { decisions, costs: decisions.map(() => 1), deniedBy: -1, rolledBack: false, retryAfterSeconds: 0, binding: 0, ...overrides };
}

const limits = [
  { name: perMinute.name, policy: perMinute },
  { name: 'burst', policy: perSecond },
];

describe('HeaderWriter', () => {
  it('writes one draft-8 member per limit, t from resetMs, and appends to another writer', () => {
    const headers = new Map<string, string>([['ratelimit', '"other";r=5;t=9'], ['ratelimit-policy', '"other";q=10;w=10']]);
    new HeaderWriter('draft-8', limits).write(access, headers, source([
      makeDecision(true, 100, 99, 59_001, 0, 0, perMinute),
      makeDecision(true, 10, 3, 700, 0, 0, perSecond),
    ], { binding: 1 }));
    expect(headers.get('ratelimit')).toBe('"other";r=5;t=9, "100-in-1m";r=99;t=60, "burst";r=3;t=1');
    expect(headers.get('ratelimit-policy')).toBe('"other";q=10;w=10, "100-in-1m";q=100;w=60, "burst";q=10;w=1');
    expect(headers.has('retry-after')).toBe(false);
  });

  it('gives the denying limit t = Retry-After and reports rolled-back units as remaining', () => {
    const headers = new Map<string, string>();
    new HeaderWriter('draft-8', limits).write(access, headers, source([
      makeDecision(true, 100, 97, 30_000, 0, 0, perMinute),
      makeDecision(false, 10, 0, 1_000, 2_001, 0, perSecond),
    ], { deniedBy: 1, binding: 1, rolledBack: true, retryAfterSeconds: 3, costs: [2, 2] }));
    expect(headers.get('ratelimit')).toBe('"100-in-1m";r=99;t=30, "burst";r=0;t=3');
    expect(headers.get('retry-after')).toBe('3');
  });

  it('keeps the most restrictive limit in the single-limit formats', () => {
    const headers = new Map<string, string>();
    const writer = new HeaderWriter('draft-7', limits.slice(0, 1));
    writer.write(access, headers, source([makeDecision(true, 100, 5, 10_000, 0, 0, perMinute)]));
    writer.write(access, headers, source([makeDecision(true, 100, 50, 10_000, 0, 0, perMinute)]));
    expect(headers.get('ratelimit')).toBe('limit=100, remaining=5, reset=10');
    expect(headers.get('ratelimit-policy')).toBe('100;w=60, 100;w=60');
  });

  it('leaves out a limit admitted by a fail-open policy', () => {
    const headers = new Map<string, string>();
    const failOpen = { ...makeDecision(true, 100, 99, 0, 0, 0, perMinute), reason: 'store-error' as const };
    new HeaderWriter('draft-8', limits.slice(0, 1)).write(access, headers, source([failOpen]));
    expect(headers.has('ratelimit')).toBe(false);
    expect(headers.get('ratelimit-policy')).toBe('"100-in-1m";q=100;w=60');
  });
});

describe('HeaderWriter with claim (one response, several rl middlewares)', () => {
  const reads: string[] = [];
  const claiming: HeaderAccess<Map<string, string>> = { ...access, get: (m, n) => (reads.push(n), m.get(n.toLowerCase())), claim: claimResponse };

  it('sets the headers of the first writer without reading them back, and combines the later ones', () => {
    reads.length = 0;
    const headers = new Map<string, string>();
    new HeaderWriter('draft-8', limits.slice(0, 1)).write(claiming, headers, source([makeDecision(true, 100, 99, 59_001, 0, 0, perMinute)]));
    expect(reads).toEqual([]);
    new HeaderWriter('draft-8', limits.slice(1)).write(claiming, headers, source([makeDecision(true, 10, 3, 700, 0, 0, perSecond)]));
    expect(headers.get('ratelimit')).toBe('"100-in-1m";r=99;t=60, "burst";r=3;t=1');
    expect(headers.get('ratelimit-policy')).toBe('"100-in-1m";q=100;w=60, "burst";q=10;w=1');
    expect(reads.length).toBeGreaterThan(0);
  });

  it('keeps the most restrictive limit in the single-limit formats', () => {
    const headers = new Map<string, string>();
    const writer = new HeaderWriter('draft-6', limits.slice(0, 1));
    writer.write(claiming, headers, source([makeDecision(true, 100, 50, 10_000, 0, 0, perMinute)]));
    writer.write(claiming, headers, source([makeDecision(true, 100, 5, 10_000, 0, 0, perMinute)]));
    writer.write(claiming, headers, source([makeDecision(true, 100, 70, 10_000, 0, 0, perMinute)]));
    expect(headers.get('ratelimit-remaining')).toBe('5');
    expect(claimResponse(headers)).toBe(false);
  });
});

describe('nodeHeaderAccess', () => {
  it('combines two writers on one ServerResponse, the first without reading back', () => {
    const res = new ServerResponse(new IncomingMessage(new Socket()));
    const reads: string[] = [];
    const getHeader = res.getHeader.bind(res);
    res.getHeader = (name: string) => (reads.push(name), getHeader(name));
    new HeaderWriter('draft-8', limits.slice(0, 1)).write(nodeHeaderAccess, res, source([makeDecision(true, 100, 99, 59_001, 0, 0, perMinute)]));
    expect(reads).toEqual([]);
    new HeaderWriter('draft-8', limits.slice(1)).write(nodeHeaderAccess, res, source([makeDecision(true, 10, 3, 700, 0, 0, perSecond)]));
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
    new HeaderWriter('legacy', limits, () => 1_000_000).write(access, headers, source([makeDecision(true, 100, 99, 59_001, 0, 0, perMinute)]));
    expect(headers.get('x-ratelimit-reset')).toBe(String(Math.ceil((1_000_000 + 59_001) / 1000)));
  });
});
