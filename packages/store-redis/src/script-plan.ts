import { UnsupportedError, type Algorithm } from '@rl/core';
import { luaScripts, type LuaScript } from './lua-scripts.generated.js';

/**
 * Added to every expiry when the caller passes its own `now` (an app clock, not Redis `TIME`): Redis
 * counts a key's TTL on its own clock, so a little slack keeps a caller's clock that runs behind Redis
 * by up to this much (latency, a paused process) from seeing its state expire before it recovered.
 * With Redis `TIME` the TTL and the state share one clock and no slack is needed.
 */
export const EXPLICIT_NOW_EXPIRY_MARGIN_MS = 1000;

/** HORIZON is capped here (about 3 years, in ms) so that twice it stays a valid PEXPIRE argument. */
const MAX_HORIZON_MS = 1e11;

/** Bytes of one float64 of a packed state. */
const DOUBLE_BYTES = 8;

/** A name the store may declare in a script's text: upper case, a Lua identifier. */
const LUA_CONSTANT_NAME = /^[A-Z][A-Z0-9_]*$/;

/** One script per operation: consume, peek, undo; acquire and release for a lease limit. */
export type Operation = 'c' | 'p' | 'u' | 'a' | 'r';

export type ScriptCall = (this: unknown, ...args: string[]) => Promise<unknown>;

/** What the store derives once per algorithm object, from its {@link Algorithm.script} alone. */
export interface ScriptPlan {
  readonly script: LuaScript;
  /** The configuration's declarations, put before the script (see prelude.lua). */
  readonly constants: string;
  /** `:<stateTag>` (and the layout revision when above 1): ends the Redis key of a bucket, or the name of a state with keys of its own. */
  readonly suffix: string;
  /** True for the compact layout: the state is a field of a bucket hash. */
  readonly compact: boolean;
  /** Keys of their own: the suffix each key adds to the state's name, in the script's KEYS order. */
  readonly keys: readonly string[];
  /** Compact layout: the Redis key of each bucket, made on first use. */
  readonly bucketKeys: string[];
  /** The script of each operation, defined on the client on first use. */
  readonly calls: Partial<Record<Operation, ScriptCall>>;
}

/**
 * The plan of an algorithm: its Lua twin, and the declarations of its configuration (the margin, its
 * constants, and for the compact layout HORIZON and STATE_BYTES). Throws {@link UnsupportedError} when
 * the store has no twin of that name or the twin does not read what the algorithm describes (layout,
 * number of keys, constants): a twin and its algorithm that drifted apart never run.
 */
export function planScript(algorithm: Algorithm): ScriptPlan {
  const { name, constants, layout, layoutRevision } = algorithm.script;
  const script = (luaScripts as Readonly<Record<string, LuaScript | undefined>>)[name];
  const what = `RedisStore: the ${algorithm.kind} algorithm`;
  if (script === undefined) throw new UnsupportedError(`${what} runs the Lua script ${name}, which this version of @rl/store-redis does not have.`);
  const keys = layout.compact ? [] : layout.keys;
  const numberOfKeys = layout.compact ? 1 : keys.length;
  if (script.compact !== layout.compact || script.numberOfKeys !== numberOfKeys || (!layout.compact && (numberOfKeys < 1 || numberOfKeys > 3))) {
    throw new UnsupportedError(
      `${what} describes ${layout.compact ? 'the compact layout' : `${numberOfKeys} keys of its own`}; its script ${name} keeps ${script.compact ? 'the compact layout' : `${script.numberOfKeys} keys of its own`} (at most 3).`,
    );
  }
  const names = constants.map((c) => c.name);
  if ([...names].sort().join() !== script.constants.join()) {
    throw new UnsupportedError(`${what} gives the constants ${names.join(', ')}; its script ${name} reads ${script.constants.join(', ')}.`);
  }
  const values = constants.map(({ name: constant, value }) => {
    if (!LUA_CONSTANT_NAME.test(constant) || typeof value !== 'number' || !Number.isFinite(value)) {
      throw new UnsupportedError(`${what} gives the constant ${constant} = ${String(value)}: expected an upper-case name and a finite number.`);
    }
    // The shortest text that reads back as the same double, in a form Lua's number literals accept.
    return String(value);
  });
  let declarations = `local EXPLICIT_NOW_MARGIN_MS = ${EXPLICIT_NOW_EXPIRY_MARGIN_MS}\n`;
  if (names.length > 0) declarations += `local ${names.join(', ')} = ${values.join(', ')}\n`;
  if (layout.compact) {
    if (!(layout.horizonMs >= 0) || !Number.isInteger(layout.stateSize) || layout.stateSize < 1) {
      throw new UnsupportedError(`${what} gives a compact layout of ${String(layout.stateSize)} numbers recovering in ${String(layout.horizonMs)} ms: expected a whole number of at least 1 and a duration.`);
    }
    // A packed state is `kept` (see prelude-compact.lua) and then the algorithm's state.
    declarations += `local HORIZON, STATE_BYTES = ${String(Math.min(layout.horizonMs, MAX_HORIZON_MS))}, ${DOUBLE_BYTES * (1 + layout.stateSize)}\n`;
  }
  const suffix = `:${algorithm.stateTag}${layoutRevision > 1 ? String(layoutRevision) : ''}`;
  return { script, constants: declarations, suffix, compact: layout.compact, keys, bucketKeys: [], calls: {} };
}
