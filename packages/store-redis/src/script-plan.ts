import { UnsupportedError, type Algorithm, type TimedConstants } from '@rl/core/store';
import { luaScripts, type LuaScript } from './lua-scripts.generated.js';
import { argumentPositions, configurationStart, type Call } from './wire.js';

/**
 * Added to every expiry when the caller passes its own `now` (an app clock, not Redis `TIME`): Redis
 * counts a key's TTL on its own clock, so a little slack keeps a caller's clock that runs behind Redis
 * by up to this much (latency, a paused process) from seeing its state expire before it recovered.
 * With Redis `TIME` the TTL and the state share one clock and no slack is needed.
 */
export const EXPLICIT_NOW_EXPIRY_MARGIN_MS = 1000;

/**
 * Distinct configurations a store runs inline (the constants in the script text: one script per
 * configuration and call, see src/wire.ts: the fastest call); every configuration beyond them is sent
 * by argument (one script per script name and call for all of them), so neither Redis's script cache nor the
 * store's tables grow with the number of configurations. A few static configurations (plans, routes)
 * stay inline; quotas built per request from data go by argument once the first 64 are taken.
 */
export const INLINE_CONFIGURATIONS = 64;

/** HORIZON is capped here (about 3 years, in ms) so that twice it stays a valid PEXPIRE argument. */
const MAX_HORIZON_MS = 1e11;

/** Bytes of one float64 of a packed state. */
const DOUBLE_BYTES = 8;

/** The field of a key's override is this and the state's field (see src/overrides.ts). */
export const OVERRIDE_FIELD_PREFIX = '#=';

/** Bytes of an override's record before the configuration's numbers: `kept`, the end, the policy's length (see src/overrides.ts). */
export const OVERRIDE_NUMBERS_AT = 24;

/** The line of the generated scripts (in the compact prelude) where the store puts an override's read (see scripts/generate-lua.mjs). */
const OVERRIDE_PLACE = /^--@override\n/m;

export type ScriptCall = (this: unknown, ...args: string[]) => Promise<unknown>;

/** A call of a batch script (see batch-script.ts): its keys are the first `numberOfKeys` of `args`. */
export type BatchCall = (numberOfKeys: number, args: string[]) => Promise<unknown>;

/** The script of each call (see src/wire.ts), defined on the client on first use; shared by every plan that runs the same script text. */
export type ScriptCalls = Partial<Record<Call, ScriptCall>>;

/** What the store derives from an algorithm's {@link Algorithm.script} alone, once per algorithm object. */
export interface ScriptConfiguration {
  readonly script: LuaScript;
  /**
   * The configuration's numbers as sent by argument, each `String(value)` (the shortest text that
   * reads back as the same double, in Lua as in JS): the constants in the order of `script.constants`
   * (sorted), then HORIZON for the compact layout.
   */
  readonly values: readonly string[];
  /** Compact layout: the bytes of a packed state (`kept` and the algorithm's doubles); 0 otherwise. */
  readonly stateBytes: number;
  /** What makes two configurations the same: the script's name, `values`, `stateBytes` and `overrides`. */
  readonly id: string;
  /** `:<stateTag>` (and the layout revision when above 1): ends the Redis key of a bucket, or the name of a state with keys of its own. */
  readonly suffix: string;
  /** True for the compact layout: the state is a field of a bucket hash. */
  readonly compact: boolean;
  /** Keys of their own: the suffix each key adds to the state's name, in the script's KEYS order. */
  readonly keys: readonly string[];
  /**
   * Constants that change with time (`script.timed`): their places in {@link ScriptConfiguration.values}
   * (which holds `''` there) and their values per call. A configuration with them is always sent by
   * argument (see {@link configurationArguments}).
   */
  readonly timed: TimedPlan | undefined;
  /** The names of the constants that change with time (empty for none). */
  readonly timedNames: readonly string[];
  /** True when the script reads the key's override (`script.overrides`, compact layout): its `lua` has the read (see {@link overrideRead}). */
  readonly overrides: boolean;
  /** The script's text as it runs (the configuration's declarations go before it). */
  readonly lua: string;
}

/** Constants that change with time, in a configuration: where they go, and the configuration last filled with them. */
export interface TimedPlan {
  readonly at: readonly number[];
  readonly constants: TimedConstants;
  /** The values `filled` was made from (`constants.values` returns the same array while they do not change). */
  from: readonly string[] | undefined;
  filled: readonly string[];
}

/** How the store runs one algorithm object: its configuration, and what it shares with other plans. */
export interface ScriptPlan extends ScriptConfiguration {
  /** True when the configuration is sent by argument ({@link argumentDeclarations}); false when inline ({@link inlineDeclarations}). */
  readonly byArgument: boolean;
  /** Compact layout: the Redis key of each bucket, made on first use; one array per suffix, shared by every plan of the store. */
  readonly bucketKeys: string[];
  /** The scripts of this plan's configuration (inline), or of its script name (by argument). */
  readonly calls: ScriptCalls;
}

/**
 * The configuration of an algorithm: its Lua twin and the numbers of its configuration (its
 * constants, and for the compact layout HORIZON and STATE_BYTES). Throws {@link UnsupportedError} when
 * the store has no twin of that name or the twin does not read what the algorithm describes (layout,
 * number of keys, constants): a twin and its algorithm that drifted apart never run.
 */
export function planScript(algorithm: Algorithm): ScriptConfiguration {
  const { name, constants, layout, layoutRevision } = algorithm.script;
  const script = (luaScripts as Readonly<Record<string, LuaScript | undefined>>)[name];
  const what = `RedisStore: the ${algorithm.kind} algorithm`;
  if (script === undefined)
    throw new UnsupportedError(
      `${what} runs the Lua script ${name}, which this version of @rl/store-redis does not have.`,
    );
  const keys = layout.compact ? [] : layout.keys;
  const numberOfKeys = layout.compact ? 1 : keys.length;
  if (
    script.compact !== layout.compact ||
    script.numberOfKeys !== numberOfKeys ||
    (!layout.compact && (numberOfKeys < 1 || numberOfKeys > 3))
  ) {
    throw new UnsupportedError(
      `${what} describes ${layout.compact ? 'the compact layout' : `${numberOfKeys} keys of its own`}; its script ${name} keeps ${script.compact ? 'the compact layout' : `${script.numberOfKeys} keys of its own`} (at most 3).`,
    );
  }
  // The values in the script's (sorted) order: each name found once, none missing, none extra.
  const values: string[] = [];
  const timedNames = algorithm.script.timed?.names ?? [];
  const given = [...constants.map((c) => c.name), ...timedNames];
  const mismatch = () =>
    new UnsupportedError(
      `${what} gives the constants ${given.join(', ')}; its script ${name} reads ${script.constants.join(', ')}.`,
    );
  if (given.length !== script.constants.length) throw mismatch();
  for (const { name: constant, value } of constants) {
    const at = script.constants.indexOf(constant);
    if (at === -1 || values[at] !== undefined) throw mismatch();
    // The name is one the script reads, an upper-case Lua identifier (the generator found it so).
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      throw new UnsupportedError(
        `${what} gives the constant ${constant} = ${String(value)}: expected a finite number.`,
      );
    }
    // The shortest text that reads back as the same double, in a form Lua's number literals and
    // `tonumber` accept (never hexadecimal, never 'Infinity' or 'NaN': the value is finite).
    values[at] = String(value);
  }
  const timedAt = timedNames.map((constant) => {
    const at = script.constants.indexOf(constant);
    if (at === -1 || values[at] !== undefined) throw mismatch();
    values[at] = '';
    return at;
  });
  let stateBytes = 0;
  if (layout.compact) {
    if (!(layout.horizonMs >= 0) || !Number.isInteger(layout.stateSize) || layout.stateSize < 1) {
      throw new UnsupportedError(
        `${what} gives a compact layout of ${String(layout.stateSize)} numbers recovering in ${String(layout.horizonMs)} ms: expected a whole number of at least 1 and a duration.`,
      );
    }
    values.push(String(Math.min(layout.horizonMs, MAX_HORIZON_MS)));
    // A packed state is `kept` (see prelude-compact.lua) and then the algorithm's state.
    stateBytes = DOUBLE_BYTES * (1 + layout.stateSize);
  }
  const suffix = `:${algorithm.stateTag}${layoutRevision > 1 ? String(layoutRevision) : ''}`;
  const timed =
    algorithm.script.timed === undefined
      ? undefined
      : { at: timedAt, constants: algorithm.script.timed, from: undefined, filled: values };
  const overrides = algorithm.script.overrides === true && layout.compact;
  const config = {
    script,
    values,
    stateBytes,
    id: `${name} ${values.join(' ')} ${stateBytes}${overrides ? ' overrides' : ''}`,
    suffix,
    compact: layout.compact,
    keys,
    timed,
    timedNames,
    overrides,
    lua: script.lua,
  };
  return overrides ? { ...config, lua: script.lua.replace(OVERRIDE_PLACE, overrideRead(config)) } : config;
}

/** The names an override replaces in `config`'s script: its constants but BLOCK_MS and the timed ones, then HORIZON. */
export function overriddenNames(config: Pick<ScriptConfiguration, 'script' | 'timedNames'>): string[] {
  return [
    ...config.script.constants.filter((name) => name !== 'BLOCK_MS' && !config.timedNames.includes(name)),
    'HORIZON',
  ];
}

/**
 * The Lua put in place of the override's mark (prelude-compact.lua) for an algorithm that checks
 * overrides: while the key's record (src/overrides.ts) is live, its numbers replace the constants, its
 * policy and its end are kept for the reply, and a reservation of a cost above its limit accepts no slot
 * (`requestUnder` in @rl/core). A record too short for this configuration's numbers is ignored.
 */
function overrideRead(config: Pick<ScriptConfiguration, 'script' | 'timedNames'>): string {
  const names = overriddenNames(config);
  const policyAt = OVERRIDE_NUMBERS_AT + DOUBLE_BYTES * names.length;
  return (
    `local override_raw = redis.call('HGET', bucket, '${OVERRIDE_FIELD_PREFIX}' .. field)\n` +
    `if override_raw and #override_raw >= ${policyAt + 24} and struct.unpack('<d', override_raw, 9) > now then\n` +
    `  override_policy = override_raw:sub(${policyAt + 1}, ${policyAt} + struct.unpack('<d', override_raw, 17))\n` +
    `  override_end = struct.unpack('<d', override_raw, 9)\n` +
    `  ${names.join(', ')} = struct.unpack('<${'d'.repeat(names.length)}', override_raw, ${OVERRIDE_NUMBERS_AT + 1})\n` +
    // A reservation of a cost above the override's limit (its policy's first double) accepts no slot
    // (-1: NO_SLOT of requestUnder in @rl/core, the TS twin): denied, nothing taken nor counted.
    `  if max_delay ~= nil and cost > struct.unpack('<d', override_policy, 1) then max_delay = -1 end\n` +
    `end\n`
  );
}

/**
 * The configuration a call by argument sends after its own arguments: the plan's values, and
 * for constants that change with time their values at the call's `now` (`values[1]` of src/wire.ts's
 * arguments; absent, this process's clock, which the script allows to differ from Redis TIME as the
 * algorithm says).
 */
export function configurationArguments(
  plan: ScriptConfiguration,
  values: readonly (string | undefined)[],
): readonly string[] {
  if (plan.timed === undefined) return plan.values;
  const now = values[1] === undefined ? Date.now() : Number(values[1]);
  // A `now` that is no finite number is sent without the constants: the script rejects it first.
  if (!Number.isFinite(now)) return plan.values;
  const timed = plan.timed;
  const current = timed.constants.values(now);
  if (current !== timed.from) {
    const filled = [...plan.values];
    timed.at.forEach((at, i) => {
      filled[at] = current[i]!;
    });
    timed.from = current;
    timed.filled = filled;
  }
  return timed.filled;
}

/**
 * The declarations of a configuration sent inline, put before the script (see prelude.lua): the
 * margin, the argument positions (src/wire.ts), the constants as number literals, and for the compact
 * layout HORIZON and STATE_BYTES.
 */
export function inlineDeclarations(config: ScriptConfiguration): string {
  return declarations(config, config.values);
}

/**
 * The declarations of every configuration of a script sent by argument (see prelude.lua): the same
 * names, each read with `tonumber` from the arguments after everything `call` sends
 * ({@link configurationStart}), in the order of {@link ScriptConfiguration.values}; `tonumber` reads
 * `String(value)` back as the same double a literal gives. STATE_BYTES, the same for every
 * configuration of a layout, stays a literal.
 */
export function argumentDeclarations(config: ScriptConfiguration, call: Call): string {
  const first = configurationStart(config.compact, call);
  return declarations(
    config,
    config.values.map((_, i) => `tonumber(ARGV[${first + i}])`),
  );
}

/**
 * The declarations of a configuration sent by argument, read from the arguments from `at` on (`at`
 * the name of a Lua local that holds the index of the first): for a batch, whose decisions' calls,
 * hence the place of their configuration, differ (see batch-script.ts).
 */
export function argumentDeclarationsAt(config: ScriptConfiguration, at: string): string {
  return declarations(
    config,
    config.values.map((_, i) => `tonumber(ARGV[${at} + ${i}])`),
  );
}

/** The declarations with `values` (literals or expressions, in the order of {@link ScriptConfiguration.values}). */
function declarations(config: ScriptConfiguration, values: readonly string[]): string {
  const names = config.script.constants;
  let text = `local EXPLICIT_NOW_MARGIN_MS, IDEM_KEY = ${EXPLICIT_NOW_EXPIRY_MARGIN_MS}, ${config.script.numberOfKeys + 1}\n${argumentPositions(config.compact)}`;
  if (names.length > 0) text += `local ${names.join(', ')} = ${values.slice(0, names.length).join(', ')}\n`;
  if (config.compact) text += `local HORIZON, STATE_BYTES = ${values[names.length]!}, ${config.stateBytes}\n`;
  return text;
}
