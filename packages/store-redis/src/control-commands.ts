import {
  BLOCK_KEY_SUFFIX,
  StoreClosedError,
  UnsupportedError,
  type Algorithm,
  type StoredOverride,
} from '@rl/core/store';
import type { ClientAdapter } from './clients/client.js';
import { fieldOf } from './keys.js';
import type { ResetChannel } from './reset-channel.js';
import { EXPLICIT_NOW_EXPIRY_MARGIN_MS, type ScriptCall, type ScriptPlan } from './script-plan.js';
import type { ScriptPlans } from './script-plans.js';
import { storeError } from './store-error.js';
import { IDEMPOTENCY_KEY_SUFFIX, type StoreKeys } from './store-keys.js';
import {
  GET_OVERRIDE_LUA,
  OVERRIDE_FIELD_PREFIX,
  overrideArguments,
  overrideOfRecord,
  SET_OVERRIDE_LUA,
} from './overrides.js';

/**
 * Writes a ban where the blocking variants read a block (block-read-compact.lua, block-read-keys.lua),
 * with the mark that makes it a ban: the block field '#!<field>' of the state's bucket hash as three
 * doubles (`kept`, `blocked_until`, 1), or the state's `:block` key as two (`blocked_until`, 1).
 * KEYS[1] the bucket hash, or the `:block` key; ARGV[1] the field ('' for the `:block` key), ARGV[2]
 * the ban's length (ms), ARGV[3] the caller's `now` ('' for Redis TIME, then with no expiry margin).
 * The hash's expiry is made to cover the ban, as compact-write.lua does for a state.
 */
const BAN_LUA = `local t = redis.call('TIME')
local redis_now = t[1] * 1000 + t[2] / 1000
local now, margin = tonumber(ARGV[3]), ${EXPLICIT_NOW_EXPIRY_MARGIN_MS}
if now == nil then now, margin = redis_now, 0 end
local length = tonumber(ARGV[2])
local ttl = math.ceil(length) + margin
if ARGV[1] == '' then
  redis.call('SET', KEYS[1], struct.pack('<dd', now + length, 1), 'PX', ttl)
  return nil
end
local pttl = redis.call('PTTL', KEYS[1])
local extend = pttl < ttl
if extend then pttl = 2 * ttl end
redis.call('HSET', KEYS[1], '#!' .. ARGV[1], struct.pack('<ddd', redis_now + pttl, now + length, 1))
if extend then redis.call('PEXPIRE', KEYS[1], pttl) end
return nil
`;

/** What a control needs of its algorithm's plan. */
interface Control {
  /** The control, as a `StoreError` names it. */
  readonly name: string;
  /**
   * It reads or writes a key's override: the plan must keep the compact layout, whose scripts read an
   * override (src/overrides.ts); a state with keys of its own throws `UnsupportedError`.
   */
  readonly overridable: boolean;
  /** It runs no script of the plan (it writes beside the state): a plan that takes no inline place (`ScriptPlans.detached`). */
  readonly detached: boolean;
}

/** What {@link ControlCommands} works with: the store's parts, and whether the store is closed. */
export interface ControlParts {
  readonly adapter: ClientAdapter;
  readonly plans: ScriptPlans;
  readonly keys: StoreKeys;
  readonly resets: ResetChannel;
  /** True once the store is closed. */
  readonly closed: () => boolean;
}

/** The controls of {@link ControlCommands}, each with what it needs. */
const CONTROLS = {
  reset: { name: 'reset', overridable: false, detached: false },
  ban: { name: 'ban', overridable: false, detached: false },
  unban: { name: 'unban', overridable: false, detached: false },
  setOverride: { name: 'setOverride', overridable: true, detached: true },
  getOverride: { name: 'getOverride', overridable: true, detached: false },
  clearOverride: { name: 'clearOverride', overridable: true, detached: false },
} as const satisfies Record<string, Control>;

/**
 * The Redis commands of an operator's calls on a key (`Store.ban`, `Store.unban`, `Store.setOverride`,
 * …, `Store.reset`), one call each, with the key's plan: the Lua of a ban and of an override's write and
 * read, the deletes of an unban, an override's removal and a reset. All but a read are heard by every
 * process's deny cache (a change may free what a cached denial holds), and resolve only once every
 * store subscribed to the notices confirmed it (see src/reset-channel.ts). On a closed store each
 * rejects with `StoreClosedError`; a Redis failure with a `StoreError` naming the control.
 */
export class ControlCommands {
  private script: ScriptCall | undefined;
  private setScript: ScriptCall | undefined;
  private getScript: ScriptCall | undefined;
  private readonly parts: ControlParts;

  constructor(parts: ControlParts) {
    this.parts = parts;
  }

  /** Bans `key` for `durationMs` (see `Store.ban`): one call, where the blocking variants read a block. */
  ban(key: string, algorithm: Algorithm, durationMs: number, now: number | undefined): Promise<void> {
    return this.control(CONTROLS.ban, algorithm, (plan) => this.writeBan(plan, key, durationMs, now));
  }

  /** Lifts `key`'s ban or lockout (see `Store.unban`); every process's deny cache hears it, as a reset. */
  unban(key: string, algorithm: Algorithm): Promise<void> {
    return this.control(CONTROLS.unban, algorithm, (plan) => this.removeBan(plan, key));
  }

  /** Writes `override` as `key`'s override for `ttlMs` (see `Store.setOverride`): one call, the field '#=<field>' of its bucket hash (see src/overrides.ts). */
  setOverride(key: string, override: Algorithm, ttlMs: number, now: number | undefined): Promise<void> {
    return this.control(CONTROLS.setOverride, override, (plan) => this.writeOverride(plan, key, override, ttlMs, now));
  }

  /** `key`'s live override for this algorithm's kind, or undefined. */
  getOverride(key: string, algorithm: Algorithm, now: number | undefined): Promise<StoredOverride | undefined> {
    return this.control(CONTROLS.getOverride, algorithm, (plan) => this.readOverride(plan, key, now));
  }

  clearOverride(key: string, algorithm: Algorithm): Promise<void> {
    return this.control(CONTROLS.clearOverride, algorithm, (plan) => this.removeOverride(plan, key));
  }

  /** Forgets `key`'s state for this algorithm kind, its lockout or ban and its remembered ids (its override stays). */
  reset(key: string, algorithm: Algorithm): Promise<void> {
    return this.control(CONTROLS.reset, algorithm, (plan) => this.removeState(plan, key, algorithm));
  }

  /** Runs a control with `algorithm`'s plan, as `control` says it needs it; a failure as a `StoreError` naming the control. */
  private async control<T>(control: Control, algorithm: Algorithm, run: (plan: ScriptPlan) => Promise<T>): Promise<T> {
    if (this.parts.closed()) throw new StoreClosedError();
    const plan = control.detached ? this.parts.plans.detached(algorithm) : this.parts.plans.of(algorithm);
    if (control.overridable && !plan.compact) {
      throw new UnsupportedError(
        `RedisStore: the ${algorithm.kind} algorithm keeps its state under keys of its own, where no override is read (capabilities.overrides lists the kinds it overrides).`,
      );
    }
    return run(plan).catch((error: unknown) => Promise.reject(storeError(control.name, error, this.parts.adapter)));
  }

  private async writeBan(plan: ScriptPlan, key: string, durationMs: number, now: number | undefined): Promise<void> {
    this.script ??= this.parts.adapter.script('rl_ban', 1, BAN_LUA);
    const [target, field] = this.where(plan, key);
    await this.script.call(undefined, target, field, String(durationMs), now === undefined ? '' : String(now));
    // Every process's deny cache forgets the key's cached denial: a ban may end sooner than a lockout
    // or an earlier ban it replaces.
    await this.parts.resets.announce(key);
  }

  private async removeBan(plan: ScriptPlan, key: string): Promise<void> {
    const [target, field] = this.where(plan, key);
    if (field === '') await this.parts.adapter.del([target]);
    else await this.parts.adapter.hdel(target, [`#!${field}`]);
    // Every process's deny cache forgets the key's cached denial, as after a reset.
    await this.parts.resets.announce(key);
  }

  private async writeOverride(
    plan: ScriptPlan,
    key: string,
    override: Algorithm,
    ttlMs: number,
    now: number | undefined,
  ): Promise<void> {
    this.setScript ??= this.parts.adapter.script('rl_set_override', 1, SET_OVERRIDE_LUA);
    await this.setScript.call(
      undefined,
      this.parts.keys.bucketKey(plan, key),
      fieldOf(key),
      String(ttlMs),
      ...overrideArguments(override, plan, now),
    );
    await this.parts.resets.announce(key);
  }

  private async readOverride(
    plan: ScriptPlan,
    key: string,
    now: number | undefined,
  ): Promise<StoredOverride | undefined> {
    this.getScript ??= this.parts.adapter.script('rl_get_override', 1, GET_OVERRIDE_LUA);
    const record = await this.getScript.call(
      undefined,
      this.parts.keys.bucketKey(plan, key),
      fieldOf(key),
      now === undefined ? '' : String(now),
    );
    return Buffer.isBuffer(record) ? overrideOfRecord(record, plan) : undefined;
  }

  private async removeOverride(plan: ScriptPlan, key: string): Promise<void> {
    await this.parts.adapter.hdel(this.parts.keys.bucketKey(plan, key), [`${OVERRIDE_FIELD_PREFIX}${fieldOf(key)}`]);
    await this.parts.resets.announce(key);
  }

  /** Forgets `key`'s state in `plan`'s layout, its block and its remembered ids; its override stays (a configuration, not a state). */
  private async removeState(plan: ScriptPlan, key: string, algorithm: Algorithm): Promise<void> {
    // In the compact layout a lockout or ban is the field '#!<field>' (see block-read-compact.lua):
    // lifted too. The remembered ids of idempotent charges go too: '#~<field>', or the `:idem` key.
    if (plan.compact)
      await this.parts.adapter.hdel(this.parts.keys.bucketKey(plan, key), [
        fieldOf(key),
        `#!${fieldOf(key)}`,
        `#~${fieldOf(key)}`,
      ]);
    else {
      // Keys of their own: a lockout is the state's `:block` key, lifted too, also through a
      // configuration without a lockout (whose keys do not list it).
      const keys = this.parts.keys.start(plan, key);
      if (algorithm.stateKind !== 'leases') keys.push(this.parts.keys.base(key) + plan.suffix + IDEMPOTENCY_KEY_SUFFIX);
      if (algorithm.stateKind !== 'leases' && !plan.keys.includes(BLOCK_KEY_SUFFIX))
        keys.push(this.parts.keys.base(key) + plan.suffix + BLOCK_KEY_SUFFIX);
      await this.parts.adapter.del(keys);
    }
    // Every process's deny cache forgets the key (its lockout lifted, its state gone).
    await this.parts.resets.announce(key);
  }

  /** The bucket hash and the field of `key`'s block, or its `:block` key and ''. */
  private where(plan: ScriptPlan, key: string): [string, string] {
    return plan.compact
      ? [this.parts.keys.bucketKey(plan, key), fieldOf(key)]
      : [this.parts.keys.base(key) + plan.suffix + BLOCK_KEY_SUFFIX, ''];
  }
}
