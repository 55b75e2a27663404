import type { Algorithm } from '@rl/core/store';
import { createHash } from 'node:crypto';
import type { ClientAdapter } from './clients/client.js';
import type { LuaScript } from './lua-scripts.generated.js';
import {
  INLINE_CONFIGURATIONS,
  argumentDeclarations,
  inlineDeclarations,
  planScript,
  type ScriptCall,
  type ScriptCalls,
  type ScriptConfiguration,
  type ScriptPlan,
} from './script-plan.js';
import { isIdempotent, keysOf, operationOf, type Call } from './wire.js';

/**
 * A store's plans: the plan of each algorithm object (made on its first use, collected with it) and
 * the scripts it defines on the client. The first `inlineLimit` distinct configurations each get a
 * script per call with their numbers in its text; every further configuration shares one script
 * per script and state size, its numbers sent by argument, so neither Redis's script cache nor these
 * tables grow with the number of configurations.
 */
export class ScriptPlans {
  /** How many configurations go inline: {@link INLINE_CONFIGURATIONS} (the store's tests lower it). */
  inlineLimit = INLINE_CONFIGURATIONS;
  /** Scripts defined on the client so far (each one a script Redis caches). */
  defined = 0;
  private readonly plans = new WeakMap<Algorithm, ScriptPlan>();
  /** The scripts of each configuration sent inline, by configuration id (see `planScript`): at most `inlineLimit` entries, kept for the store's life. */
  private readonly inline = new Map<string, ScriptCalls>();
  /** The scripts of the configurations sent by argument, by script and state size: one entry per layout of a script. */
  private readonly byArgument = new Map<LuaScript, Map<number, ScriptCalls>>();
  /** Compact layout: the Redis key of each bucket, by suffix (one array per state tag and revision). */
  private readonly bucketKeysBySuffix = new Map<string, string[]>();

  constructor(private readonly adapter: ClientAdapter) {}

  /**
   * The plan of an algorithm object. A configuration already inline shares its scripts; a new one goes
   * inline while fewer than `inlineLimit` are, and by argument after that (for good: the table never
   * evicts, since Redis would keep the evicted scripts cached anyway).
   */
  of(algorithm: Algorithm): ScriptPlan {
    let plan = this.plans.get(algorithm);
    if (plan === undefined) {
      const config = planScript(algorithm);
      let calls = this.inline.get(config.id);
      // A configuration with constants that change with time is sent by argument: inline, it would be a script per period.
      if (calls === undefined && this.inline.size < this.inlineLimit && config.timed === undefined)
        this.inline.set(config.id, (calls = {}));
      const byArgument = calls === undefined;
      if (calls === undefined) {
        let ofScript = this.byArgument.get(config.script);
        if (ofScript === undefined) this.byArgument.set(config.script, (ofScript = new Map()));
        // One entry per layout, and per reading of overrides (another script text).
        const layout = config.overrides ? -config.stateBytes - 1 : config.stateBytes;
        calls = ofScript.get(layout);
        if (calls === undefined) ofScript.set(layout, (calls = {}));
      }
      plan = this.planOf(config, byArgument, calls);
      this.plans.set(algorithm, plan);
    }
    return plan;
  }

  /**
   * A plan of `algorithm` that runs no script (its calls stay empty, and it takes no inline place):
   * for what the store writes beside a state, an override's record, which needs the configuration's
   * numbers and the state's keys, whatever the number of configurations written so.
   */
  detached(algorithm: Algorithm): ScriptPlan {
    return this.planOf(planScript(algorithm), true, {});
  }

  /** The plan of `config`, its calls `calls` (sent by argument or inline), with its suffix's bucket keys. */
  private planOf(config: ScriptConfiguration, byArgument: boolean, calls: ScriptPlan['calls']): ScriptPlan {
    let bucketKeys = this.bucketKeysBySuffix.get(config.suffix);
    if (bucketKeys === undefined) this.bucketKeysBySuffix.set(config.suffix, (bucketKeys = []));
    // Every field named (not a spread): one object shape for every plan.
    const { script, values, stateBytes, id, suffix, compact, keys, timed, timedNames, overrides, lua } = config;
    return {
      script,
      values,
      stateBytes,
      id,
      suffix,
      compact,
      keys,
      timed,
      timedNames,
      overrides,
      lua,
      byArgument,
      bucketKeys,
      calls,
    };
  }

  /**
   * Defines the script of `call` for the plan's configuration (inline) or script (by argument) on the
   * client, once per store and script text: the plans that share the text share `plan.calls`.
   */
  define(plan: ScriptPlan, call: Call): ScriptCall {
    const declarations = plan.byArgument ? argumentDeclarations(plan, call) : inlineDeclarations(plan);
    const lua = `local OP, IDEMPOTENT, BATCH_TIME, UNDO_AT, UNDO_DELAY = '${operationOf(call)}', ${String(isIdempotent(call))}, false\n${declarations}${plan.lua}`;
    const name = `rl_${plan.script.name.replace(/-/g, '_')}_${createHash('sha1').update(lua).digest('hex').slice(0, 16)}`;
    // The reply as a Buffer: the decision is binary (see prelude.lua), read without decoding it as text.
    const run = this.adapter.script(name, keysOf(plan.script.numberOfKeys, plan.compact, call), lua);
    plan.calls[call] = run;
    this.defined++;
    return run;
  }
}

/**
 * For the store's own tests (the package does not export it): how many distinct configurations
 * `store` puts inline from now on; 0 sends every new configuration by argument.
 */
export function setInlineConfigurations(store: object, count: number): void {
  (store as { plans: ScriptPlans }).plans.inlineLimit = count;
}
