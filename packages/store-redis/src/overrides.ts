import { ALGORITHM_FACTORIES } from '@rl/core';
import type { Algorithm, Policy, StoredOverride } from '@rl/core/store';
import {
  EXPLICIT_NOW_EXPIRY_MARGIN_MS,
  OVERRIDE_FIELD_PREFIX,
  OVERRIDE_NUMBERS_AT as NUMBERS_AT,
  overriddenNames,
  type ScriptConfiguration,
} from './script-plan.js';

/**
 * A key's override (`Store.setOverride`) is the field `'#=<field>'` of its state's bucket hash ('='
 * is no base64url character: never a digest's field nor a plain key's), read by the scripts of an
 * algorithm that checks overrides in the same call as the decision (see `overrideRead` in script-plan.ts).
 *
 * The record: `kept` (a double on Redis's clock: the hash's sweep drops the field once it has passed,
 * as a state's, see compact-write.lua), the end (a double on the caller's clock, as `now`), the
 * policy's length P (a double), the configuration's numbers (doubles: its constants but BLOCK_MS and
 * the timed ones, in the script's order, then HORIZON), the policy (P bytes: the limit, the quota and
 * the window in seconds as doubles, 0 for a window that changes with time, which stays the limit's
 * own; then the policy's name), then the override's kind and options as JSON, for `getOverride`.
 * A decision under an override replies the policy after its six doubles (see idem-reply.lua).
 */
export { OVERRIDE_FIELD_PREFIX };

/**
 * Writes an override: KEYS[1] the bucket hash; ARGV[1] the field, ARGV[2] the override's length (ms),
 * ARGV[3] the caller's `now` ('' for Redis TIME, then with no expiry margin), ARGV[4] the policy's
 * name, ARGV[5] the JSON, then the numbers: the configuration's, then the policy's three. The hash's
 * expiry is made to cover it, as compact-write.lua does for a state.
 */
export const SET_OVERRIDE_LUA = `local t = redis.call('TIME')
local redis_now = t[1] * 1000 + t[2] / 1000
local now, margin = tonumber(ARGV[3]), ${EXPLICIT_NOW_EXPIRY_MARGIN_MS}
if now == nil then now, margin = redis_now, 0 end
local length = tonumber(ARGV[2])
local ttl = math.ceil(length) + margin
local record = struct.pack('<ddd', redis_now + ttl, now + length, 24 + #ARGV[4])
for i = 6, #ARGV do record = record .. struct.pack('<d', tonumber(ARGV[i])) end
local pttl = redis.call('PTTL', KEYS[1])
local extend = pttl < ttl
if extend then pttl = 2 * ttl end
redis.call('HSET', KEYS[1], '${OVERRIDE_FIELD_PREFIX}' .. ARGV[1], record .. ARGV[4] .. ARGV[5])
if extend then redis.call('PEXPIRE', KEYS[1], pttl) end
return nil
`;

/** Reads a live override: KEYS[1] the bucket hash, ARGV[1] the field, ARGV[2] the caller's `now` ('' for Redis TIME). The record, or nil. */
export const GET_OVERRIDE_LUA = `local record = redis.call('HGET', KEYS[1], '${OVERRIDE_FIELD_PREFIX}' .. ARGV[1])
if not record or #record < ${NUMBERS_AT} then return nil end
local now = tonumber(ARGV[2])
if now == nil then
  local t = redis.call('TIME')
  now = t[1] * 1000 + t[2] / 1000
end
if struct.unpack('<d', record, 9) <= now then return nil end
return record
`;

/**
 * The arguments after the field and the length of {@link SET_OVERRIDE_LUA} for `override`, whose
 * configuration is `own`: `now`, the policy's name, the JSON, the numbers (in the order every script
 * of its kind that checks overrides reads them: a blocking variant's too, whose BLOCK_MS is not one).
 */
export function overrideArguments(override: Algorithm, own: ScriptConfiguration, now: number | undefined): string[] {
  const byName = new Map(own.script.constants.map((name, i) => [name, own.values[i]!]));
  byName.set('HORIZON', own.values[own.values.length - 1]!);
  const policy = override.policy;
  return [
    now === undefined ? '' : String(now),
    policy.name,
    JSON.stringify({ kind: override.kind, options: override.options }),
    ...overriddenNames(own).map((name) => byName.get(name)!),
    String(override.limit),
    String(policy.quota),
    String(override.policyAt === undefined ? policy.windowSeconds : 0),
  ];
}

/** The override of a record read by {@link GET_OVERRIDE_LUA} for `config`: its algorithm, made again from its kind and options, and its end. */
export function overrideOfRecord(record: Buffer, config: ScriptConfiguration): StoredOverride {
  const jsonAt = NUMBERS_AT + 8 * overriddenNames(config).length + record.readDoubleLE(16);
  const { kind, options } = JSON.parse(record.toString('utf8', jsonAt)) as {
    kind: string;
    options: Record<string, unknown>;
  };
  const factoryName = kind.replace(/-([a-z])/g, (_, letter: string) =>
    letter.toUpperCase(),
  ) as keyof typeof ALGORITHM_FACTORIES;
  const factory = ALGORITHM_FACTORIES[factoryName] as unknown as (options: Record<string, unknown>) => Algorithm;
  return { algorithm: factory(options), expiresAt: record.readDoubleLE(8) };
}

/** Policies made from replies, by their bytes: a bounded table, so that decisions under overrides of one shape share one object. */
const policies = new Map<string, { readonly limit: number; readonly policy: Policy }>();
const MAX_POLICIES = 1024;

/**
 * The limit and policy of a decision under an override: the reply's bytes from `offset` on (the
 * limit, the quota, the window in seconds, the name); a window of 0 is the limit's own at `at`.
 */
export function overriddenPolicy(
  reply: Buffer,
  offset: number,
  algorithm: Algorithm,
  at: number,
): { readonly limit: number; readonly policy: Policy } {
  let windowSeconds = reply.readDoubleLE(offset + 16);
  if (windowSeconds === 0) windowSeconds = (algorithm.policyAt?.(at) ?? algorithm.policy).windowSeconds;
  const id = `${windowSeconds} ${reply.toString('latin1', offset)}`;
  let found = policies.get(id);
  if (found === undefined) {
    if (policies.size >= MAX_POLICIES) policies.clear();
    const policy = Object.freeze({
      name: reply.toString('utf8', offset + 24),
      quota: reply.readDoubleLE(offset + 8),
      windowSeconds,
    });
    found = { limit: reply.readDoubleLE(offset), policy };
    policies.set(id, found);
  }
  return found;
}
