import { systemClock, type Clock } from '../clock.js';
import { reportsQuota, type Decision, type Policy } from '../decision.js';
import { InvalidOptionError } from '../errors.js';
import type { HeaderAccess } from './header-access.js';
import { AFTER, BENEATH, FIRST, isEmpty, type Placement } from './header-placement.js';
import { ceilSeconds, clampCount, clampSeconds, epochResetSeconds, sfString } from './header-values.js';

/**
 * Header formats this module writes:
 *
 * - `'draft-8'` (default): draft-ietf-httpapi-ratelimit-headers -08 to -11, structured fields,
 *   one list member per limit: `RateLimit-Policy: "100-in-1m";q=100;w=60` and
 *   `RateLimit: "100-in-1m";r=99;t=60`.
 * - `'draft-7'`: `RateLimit: limit=100, remaining=99, reset=60` and `RateLimit-Policy: 100;w=60`.
 * - `'draft-6'`: `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` (seconds) and `RateLimit-Policy`.
 * - `'legacy'`: `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` (epoch seconds) and `RateLimit-Policy`.
 *
 * A denied request also gets `Retry-After` (whole seconds), whatever the format, even with headers off.
 */
export type HeaderFormat = 'draft-8' | 'draft-7' | 'draft-6' | 'legacy';

/** Accepted spellings of the `headers` option; drafts -09 to -11 share the -08 format. */
const FORMAT_ALIASES: Readonly<Record<string, HeaderFormat>> = {
  'draft-8': 'draft-8',
  'draft-9': 'draft-8',
  'draft-10': 'draft-8',
  'draft-11': 'draft-8',
  'draft-7': 'draft-7',
  'draft-6': 'draft-6',
  legacy: 'legacy',
};

/** Validates the `headers` option: a format name, `true` (the default, draft-8) or `false` (no RateLimit headers). */
export function parseHeaderFormat(value: unknown, field: string): HeaderFormat | false {
  if (value === undefined || value === true) return 'draft-8';
  if (value === false) return false;
  const format = typeof value === 'string' ? FORMAT_ALIASES[value] : undefined;
  if (format === undefined) {
    throw new InvalidOptionError(
      field,
      value,
      "'draft-8' (the default; also 'draft-9' to 'draft-11'), 'draft-7', 'draft-6', 'legacy', true or false",
    );
  }
  return format;
}

/** What the header writer reads from the result of one request. */
export interface HeaderSource {
  /** Each limit's decision, in order; `undefined` for limits not asked (after a denial). */
  readonly decisions: readonly (Decision | undefined)[];
  /** The cost charged to each limit. */
  readonly costs: readonly number[];
  /** Index of the limit whose denial was enforced, or -1 when the request went on (a dry-run denial included). */
  readonly enforcedDeniedBy: number;
  /** True when units admitted by the limits were given back because the request was rejected. */
  readonly rolledBack: boolean;
  /** Retry-After in whole seconds (at least 1) when denied; 0 when admitted. */
  readonly retryAfterSeconds: number;
  /**
   * Index of the limit shown by the single-limit formats (draft-6, draft-7, legacy): the denying one,
   * or the one with the fewest remaining among those the client sees; -1 when it sees none.
   */
  readonly shownBinding: number;
}

/** One limit as the headers name it. */
export interface HeaderLimit {
  /** The policy name in draft-8 headers (printable ASCII); undefined: the name of the policy each decision reports (an algorithm chosen per request). */
  readonly name: string | undefined;
  /** The limit's policy; undefined when it is chosen per request (each decision reports its own). */
  readonly policy: Policy | undefined;
  /** False for a dry-run limit: it never shows in the headers. Default true. */
  readonly shown?: boolean;
}

/** The headers a format sets beside `Retry-After`. */
function formatHeaderNames(format: HeaderFormat | false): string[] {
  if (format === false) return [];
  if (format === 'draft-8' || format === 'draft-7') return ['RateLimit', 'RateLimit-Policy'];
  const prefix = format === 'draft-6' ? 'RateLimit-' : 'X-RateLimit-';
  return ['RateLimit-Policy', `${prefix}Limit`, `${prefix}Remaining`, `${prefix}Reset`];
}

/**
 * Writes the rate-limit headers of one middleware instance: the single module that writes every
 * header format. Every string that depends only on the limits (policy headers, item names) is built
 * once in the constructor; per request only the numbers are formatted.
 *
 * Several instances on one request (an app-wide limit and a route limit) combine: draft-8 list
 * members and policy lists are appended, never overwritten; the single-limit formats keep the most
 * restrictive limit (an instance replaces an earlier value only when it reports fewer remaining).
 *
 * For the limit that denied, `t` (and `reset`) is the Retry-After; for the others it is `resetMs`
 * rounded up to whole seconds.
 *
 * A limit whose algorithm is chosen per request shows the chosen one: its quota and window, and its
 * policy name unless the limit has a name of its own. A dry-run limit never shows: no list member,
 * no policy, no Retry-After for its denial.
 */
export class HeaderWriter {
  readonly format: HeaderFormat | false;
  /** `"<name>";r=` per limit (draft-8); '' for a limit named by each decision's policy. */
  private readonly itemPrefixes: readonly string[];
  /** The whole RateLimit-Policy value of this instance in the chosen format; undefined when a limit's policy is chosen per request. */
  private readonly policyValue: string | undefined;
  /** Each limit's quota as the headers say it (see {@link clampCount}); NaN for a limit chosen per request. */
  private readonly quotas: readonly number[];
  private readonly limits: readonly HeaderLimit[];
  /** Per limit: it shows in the headers (not a dry-run limit). */
  private readonly shown: readonly boolean[];
  /** The last draft-8 list member built (see {@link item}). */
  private readonly lastItem = { prefix: '', remaining: 0, seconds: 0, value: '' };
  /** Wall-clock milliseconds since the epoch, for the legacy format's absolute reset time. */
  private readonly wallClock: Clock;
  /**
   * The names of every header this writer may set (`Retry-After` and its format's): what an adapter
   * hands on with an error that replaces the response's headers (Koa's `err.headers`).
   */
  readonly names: readonly string[];

  /**
   * `wallClock` gives the epoch time of the legacy `X-RateLimit-Reset` (default `Date.now`). It is
   * not the limiter's `clock` option: that may be any millisecond time source (a test's fake time, a
   * monotonic clock), while this header is an absolute time the client compares with its own clock.
   */
  constructor(format: HeaderFormat | false, limits: readonly HeaderLimit[], wallClock: Clock = systemClock) {
    this.format = format;
    this.wallClock = wallClock;
    this.limits = limits;
    this.shown = limits.map((l) => l.shown !== false);
    this.quotas = limits.map((l) => (l.policy === undefined ? NaN : clampCount(l.policy.quota)));
    this.itemPrefixes = limits.map((l) => (l.name === undefined ? '' : `${sfString(l.name)};r=`));
    const fixed = limits.every((l) => l.policy !== undefined);
    this.policyValue = fixed ? this.policyOf(limits.map((l) => l.policy!)) : undefined;
    this.names = Object.freeze(['Retry-After', ...formatHeaderNames(format)]);
  }

  /** The RateLimit-Policy value for the limits' policies (`policies[i]`, the one limit `i` reported), the limits the client sees only. */
  private policyOf(policies: readonly (Policy | undefined)[]): string {
    let value = '';
    for (let i = 0; i < policies.length; i++) {
      const policy = policies[i];
      if (!this.shown[i] || policy === undefined) continue;
      const quota = clampCount(policy.quota);
      const member =
        this.format === 'draft-8'
          ? `${sfString(this.limits[i]!.name ?? policy.name)};q=${quota};w=${clampSeconds(policy.windowSeconds)}`
          : `${quota};w=${clampSeconds(policy.windowSeconds)}`;
      value = value === '' ? member : `${value}, ${member}`;
    }
    return value;
  }

  /** The RateLimit-Policy value of one request: the fixed one, or built from the policies its decisions report. */
  private policyFor(source: HeaderSource): string {
    return this.policyValue ?? this.policyOf(source.decisions.map((d, i) => this.limits[i]!.policy ?? d?.policy));
  }

  /**
   * The draft-8 list member of limit `i`: `"<name>";r=<remaining>;t=<seconds>`. The last one built
   * is kept: a flood of denials (and a quiet key) repeats it, and the header value is then the same
   * flat string, not a new one to format and validate.
   */
  private item(i: number, decision: Decision, remaining: number, seconds: number): string {
    const last = this.lastItem;
    const prefix = this.itemPrefixes[i] || `${sfString(decision.policy.name)};r=`;
    if (last.prefix === prefix && last.remaining === remaining && last.seconds === seconds) return last.value;
    const value = `${prefix}${remaining};t=${seconds}`;
    last.prefix = prefix;
    last.remaining = remaining;
    last.seconds = seconds;
    last.value = value;
    return value;
  }

  /**
   * Writes Retry-After (when denied) and the RateLimit headers of the chosen format.
   *
   * `first`, when the caller knows it (an adapter that keeps each request's rl result and so knows
   * whether an earlier rl middleware ran on this request): true when no other rl writer has written
   * on this response, so the headers are set without being read back. Otherwise `access.claim`
   * decides, and without a claim every header is read back before it is set.
   */
  write<T>(access: HeaderAccess<T>, target: T, source: HeaderSource, first?: boolean): void {
    this.place(access, target, source, first === undefined ? undefined : first ? FIRST : AFTER);
  }

  /**
   * Writes the headers of `source` beneath those that rl writers inside this one's middleware have
   * already written on `target`: what a Fetch middleware does, which writes on the response the rest
   * of the chain returned, so that the innermost writes first. The outcome is the one of {@link write}
   * with this writer first and the inner ones after it: its draft-8 members and policies come before
   * theirs, and in a single-limit format its values replace theirs unless theirs are a denial's (a
   * `Retry-After` is on `target`) or report fewer remaining. A denial's response (nothing inside ran),
   * or a target without `RateLimit-Policy` (no rl writer wrote on it), is written as by the first writer.
   */
  writeBeneath<T>(access: HeaderAccess<T>, target: T, source: HeaderSource): void {
    const inner =
      source.enforcedDeniedBy === -1 && this.format !== false && !isEmpty(access.get(target, 'RateLimit-Policy'));
    this.place(access, target, source, inner ? BENEATH : FIRST);
  }

  /** Writes the headers of `source` where `placement` says (undefined: `access.claim` decides between first and after). */
  private place<T>(access: HeaderAccess<T>, target: T, source: HeaderSource, placement: Placement | undefined): void {
    const deniedBy = source.enforcedDeniedBy;
    if (deniedBy !== -1) access.set(target, 'Retry-After', String(clampSeconds(source.retryAfterSeconds)));
    const format = this.format;
    if (format === false) return;
    const policyValue = this.policyFor(source);
    // Every limit is a dry-run one: the client sees nothing of them.
    if (policyValue === '') return;
    // The first rl writer on a response sets its headers directly; later ones combine with them.
    if (placement === undefined) placement = access.claim !== undefined && access.claim(target) ? FIRST : AFTER;
    if (format === 'draft-8') {
      let value = '';
      const decisions = source.decisions;
      for (let i = 0; i < decisions.length; i++) {
        const decision = decisions[i];
        if (decision === undefined || !this.shown[i] || !reported(decision)) continue;
        const item = this.item(i, decision, remainingOf(source, i, decision), secondsOf(source, i, decision));
        value = value === '' ? item : `${value}, ${item}`;
      }
      if (value !== '') placement.member(access, target, 'RateLimit', value);
      placement.member(access, target, 'RateLimit-Policy', policyValue);
      return;
    }
    placement.member(access, target, 'RateLimit-Policy', policyValue);
    const i = source.shownBinding;
    const decision = i === -1 ? undefined : source.decisions[i];
    if (decision === undefined || !reported(decision)) return;
    const remaining = remainingOf(source, i, decision);
    const seconds = secondsOf(source, i, decision);
    const fixedQuota = this.quotas[i]!;
    const quota = Number.isNaN(fixedQuota) ? clampCount(decision.policy.quota) : fixedQuota;
    const denied = deniedBy !== -1;
    if (format === 'draft-7') {
      if (!denied && !placement.replaces(access, target, 'RateLimit', remaining)) return;
      access.set(target, 'RateLimit', `limit=${quota}, remaining=${remaining}, reset=${seconds}`);
      return;
    }
    const prefix = format === 'draft-6' ? 'RateLimit-' : 'X-RateLimit-';
    if (!denied && !placement.replaces(access, target, `${prefix}Remaining`, remaining)) return;
    access.set(target, `${prefix}Limit`, String(quota));
    access.set(target, `${prefix}Remaining`, String(remaining));
    const resetMs = denied && i === deniedBy ? seconds * 1000 : decision.resetMs;
    access.set(
      target,
      `${prefix}Reset`,
      String(format === 'draft-6' ? seconds : epochResetSeconds(decision.at, resetMs, this.wallClock())),
    );
  }
}

/** A limit admitted by the failure policy (the store failed, fail open) has no meaningful numbers: it is left out. */
function reported(decision: Decision): boolean {
  return !decision.allowed || reportsQuota(decision);
}

/** Remaining units as they stand after the request: units given back by a rollback count as remaining. */
function remainingOf(source: HeaderSource, i: number, decision: Decision): number {
  if (source.rolledBack && decision.allowed && decision.reason === undefined) {
    return clampCount(Math.min(decision.limit, Math.floor(decision.remaining + source.costs[i]!)));
  }
  return clampCount(decision.remaining);
}

function secondsOf(source: HeaderSource, i: number, decision: Decision): number {
  return i === source.enforcedDeniedBy ? clampSeconds(source.retryAfterSeconds) : ceilSeconds(decision.resetMs);
}
