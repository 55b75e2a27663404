import { parseDictionary, parseItem, parseList, type BareItem, type Parameters } from 'structured-headers';
import { MAX_FIELD_SECONDS } from './retry-after.js';

/** What one response said of one rate-limit partition (a quota the server keeps for this caller). */
export interface PartitionReport {
  /**
   * The partition's name: the policy's name (`"100-in-1m"`) and, when the server names it, its
   * partition key (`pk`, draft-10 and later) after a `;`; `''` for the single-limit formats
   * (draft-6, draft-7, legacy), which name none.
   */
  readonly partition: string;
  /** Units left, an integer of 0 or more. */
  readonly remaining: number;
  /** Milliseconds from the response until the quota is back (the `t` / `reset`); undefined when the field gives none. */
  readonly resetMs: number | undefined;
}

/** Reads a response's fields by name (a `Headers`, or anything with its `get`). */
export interface FieldSource {
  get(name: string): string | null;
}

/**
 * Every partition a response reports, from the first of these the response carries whose value is
 * valid: `RateLimit` as a List (drafts 8 to 11: `"name";r=0;t=30`, with `pk` from draft 10), `RateLimit`
 * as a Dictionary (draft 7: `limit=100, remaining=0, reset=30`), `RateLimit-Remaining` and
 * `RateLimit-Reset` (draft 6), `X-RateLimit-Remaining` and `X-RateLimit-Reset` (legacy: an epoch time
 * in seconds when past 10^9, as rl and GitHub write it, else seconds from now). These are the formats
 * rl writes (`headers: 'draft-8'`, `'draft-7'`, `'draft-6'`, `'legacy'`).
 *
 * Structured fields are parsed by `structured-headers` (RFC 9651). What is malformed is left out, never
 * thrown: a field that does not parse, a member without a non-negative integer `r`, a `t` or `reset`
 * past 2^31 seconds, or a name given twice in one field (the reports conflict: neither is believed).
 * `wallNow` (milliseconds since the epoch) reads the legacy epoch reset.
 */
export function partitionReports(fields: FieldSource, wallNow: number): readonly PartitionReport[] {
  const rateLimit = fields.get('ratelimit');
  if (rateLimit !== null) {
    const reports = listReports(rateLimit) ?? dictionaryReport(rateLimit);
    if (reports !== undefined) return reports;
  }
  return (
    singleReport(fields.get('ratelimit-remaining'), fields.get('ratelimit-reset')) ??
    singleReport(fields.get('x-ratelimit-remaining'), fields.get('x-ratelimit-reset'), wallNow) ??
    []
  );
}

/** A count or a number of seconds: an Integer from 0 to 2^31; undefined otherwise. */
function count(value: BareItem | undefined): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_FIELD_SECONDS
    ? value
    : undefined;
}

/** Drafts 8 to 11; undefined when the field is no List of such members (another draft's form). */
function listReports(value: string): readonly PartitionReport[] | undefined {
  const list = parsed(parseList, value);
  if (list === undefined) return undefined;
  const byName = new Map<string, PartitionReport | null>();
  for (const [name, params] of list) {
    if (typeof name !== 'string') continue;
    const remaining = count(params.get('r'));
    if (remaining === undefined) continue;
    const partition = partitionName(name, params);
    const t = params.get('t');
    const seconds = count(t);
    if (t !== undefined && seconds === undefined) continue;
    // The same partition twice in one field: the two conflict, neither is believed.
    byName.set(partition, byName.has(partition) ? null : { partition, remaining, resetMs: secondsMs(seconds) });
  }
  return [...byName.values()].filter((r): r is PartitionReport => r !== null);
}

/** A member's name, with its partition key (`pk`, a Byte Sequence) in hex when it has one. */
function partitionName(name: string, params: Parameters): string {
  const pk = params.get('pk');
  if (!(pk instanceof ArrayBuffer)) return name;
  const hex = [...new Uint8Array(pk)].map((b) => b.toString(16).padStart(2, '0')).join('');
  return `${name};${hex}`;
}

/** Draft 7; undefined when the field is no such Dictionary. */
function dictionaryReport(value: string): readonly PartitionReport[] | undefined {
  const dictionary = parsed(parseDictionary, value);
  if (dictionary === undefined) return undefined;
  // A key given twice (a gateway's field joined with the app's): the two conflict, neither is believed.
  // The parser keeps the last, so the field's own keys are counted.
  if (['remaining', 'reset'].some((key) => keyCount(value, key) > 1)) return [];
  const member = (key: string): BareItem | undefined => {
    const m = dictionary.get(key);
    return m === undefined || Array.isArray(m[0]) ? undefined : (m[0] as BareItem);
  };
  const remaining = count(member('remaining'));
  if (remaining === undefined) return undefined;
  const reset = member('reset');
  const seconds = count(reset);
  if (reset !== undefined && seconds === undefined) return undefined;
  return [{ partition: '', remaining, resetMs: secondsMs(seconds) }];
}

/**
 * Draft 6 and legacy: two Integer fields. `wallNow` is given for the legacy fields only, whose reset
 * past 10^9 is an epoch time in seconds (a delta that long would be 31 years).
 */
function singleReport(
  remainingField: string | null,
  resetField: string | null,
  wallNow?: number,
): readonly PartitionReport[] | undefined {
  if (remainingField === null) return undefined;
  const remaining = integerField(remainingField);
  if (remaining === undefined) return undefined;
  if (resetField === null) return [{ partition: '', remaining, resetMs: undefined }];
  const reset = integerField(resetField);
  if (reset === undefined) return undefined;
  const seconds = wallNow !== undefined && reset > 1e9 ? Math.max(0, reset - wallNow / 1000) : reset;
  if (!(seconds <= MAX_FIELD_SECONDS)) return undefined; // NaN too: a wall clock that gave no number
  return [{ partition: '', remaining, resetMs: Math.ceil(seconds * 1000) }];
}

/** One Integer field of 0 or more (an epoch time included); undefined when it is anything else. */
function integerField(value: string): number | undefined {
  const item = parsed(parseItem, value)?.[0];
  return typeof item === 'number' && Number.isInteger(item) && item >= 0 ? item : undefined;
}

/** How many members of the Dictionary `value` (a parsed one) are named `key`. */
function keyCount(value: string, key: string): number {
  let count = 0;
  for (const member of value.split(',')) if (member.trim().split(/[=;]/, 1)[0] === key) count++;
  return count;
}

/** `parse(value)`, or undefined when the value is not a structured field of that type (the parser throws). */
function parsed<T>(parse: (value: string) => T, value: string): T | undefined {
  try {
    return parse(value);
  } catch {
    return undefined;
  }
}

function secondsMs(seconds: number | undefined): number | undefined {
  return seconds === undefined ? undefined : seconds * 1000;
}
