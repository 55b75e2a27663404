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

/** One group of a group script to send: its keys and arguments (see group-script.ts), and how many decisions (its members) it holds. */
export interface GroupCall {
  readonly script: GroupScript;
  readonly keys: readonly string[];
  readonly argv: readonly string[];
  readonly decisions: number;
}

/**
 * Distinct group scripts a store makes (each one a script Redis caches): one per list of families
 * (the script configurations of a request's limits, in order), which the app's compositions bound;
 * past this many, a request's limits are decided one call each, as a Cluster's limits on other slots are.
 */
export const MAX_GROUP_SCRIPTS = 256;

/** A store's group scripts, by the list of families they decide. */
export class GroupScripts {
  /** The scripts made, by their families' calls in order: a tree of maps, one level per family (no key string per request). */
  private readonly tree: ScriptNode = { next: new Map(), script: undefined };
  private made = 0;

  /** How many were made. */
  get size(): number {
    return this.made;
  }

  /** The script of `families` (plans with distinct script calls, in the order the members name them), or undefined past {@link MAX_GROUP_SCRIPTS}. */
  of(families: readonly ScriptPlan[]): GroupScript | undefined {
    const full = this.made >= MAX_GROUP_SCRIPTS;
    let node = this.tree;
    for (const plan of families) {
      let next = node.next.get(plan.calls);
      if (next === undefined) {
        // Past the bound the tree grows no more: a new list of families is decided one call each.
        if (full) return undefined;
        node.next.set(plan.calls, (next = { next: new Map(), script: undefined }));
      }
      node = next;
    }
    if (node.script === undefined) {
      if (full) return undefined;
      const lua = groupLua(families);
      node.script = {
        name: `rl_group_${createHash('sha1').update(lua).digest('hex').slice(0, 16)}`,
        lua,
        call: undefined,
      };
      this.made++;
    }
    return node.script;
  }
}

/** A level of {@link GroupScripts}' tree: the script of the families so far, and the next family's levels. */
interface ScriptNode {
  readonly next: Map<ScriptCalls, ScriptNode>;
  script: GroupScript | undefined;
}
