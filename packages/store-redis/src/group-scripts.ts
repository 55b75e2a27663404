import { createHash } from 'node:crypto';
import { groupLua } from './group-script.js';
import type { BatchCall, ScriptCalls, ScriptPlan } from './script-plan.js';

/** A group script (see group-script.ts): one per list of families a request's limits use. */
export interface GroupScript {
  readonly name: string;
  readonly lua: string;
  /** Without batching: its call on the client, defined on first use. */
  call: BatchCall | undefined;
}

/**
 * Distinct group scripts a store makes (each one a script Redis caches): one per list of families
 * (the script configurations of a request's limits, in order), which the app's compositions bound;
 * past this many, a request's limits are decided one call each, as a Cluster's limits on other slots are.
 */
export const MAX_GROUP_SCRIPTS = 256;

/** A store's group scripts, by the list of families they decide. */
export class GroupScripts {
  private readonly ids = new WeakMap<ScriptCalls, number>();
  private nextId = 0;
  private readonly scripts = new Map<string, GroupScript>();

  /** How many were made. */
  get size(): number {
    return this.scripts.size;
  }

  /** The script of `families` (plans with distinct script calls, in the order the members name them), or undefined past {@link MAX_GROUP_SCRIPTS}. */
  of(families: readonly ScriptPlan[]): GroupScript | undefined {
    let id = '';
    for (const plan of families) {
      let n = this.ids.get(plan.calls);
      if (n === undefined) this.ids.set(plan.calls, (n = this.nextId++));
      id += `${n},`;
    }
    let script = this.scripts.get(id);
    if (script === undefined) {
      if (this.scripts.size >= MAX_GROUP_SCRIPTS) return undefined;
      const lua = groupLua(families);
      script = { name: `rl_group_${createHash('sha1').update(lua).digest('hex').slice(0, 16)}`, lua, call: undefined };
      this.scripts.set(id, script);
    }
    return script;
  }
}
