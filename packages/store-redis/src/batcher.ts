import { StoreError } from '@rl/core/store';
import { createHash } from 'node:crypto';
import { batchLua } from './batch-script.js';
import { isDecisionReply } from './decision-reply.js';
import type { ClientAdapter } from './clients/client.js';
import type { BatchCall, ScriptCalls, ScriptPlan } from './script-plan.js';
import type { GroupCall, GroupScript } from './group-scripts.js';
import { keysOf, type Call } from './wire.js';

/**
 * Decisions of one script family: the plans that share one `ScriptCalls` (a configuration inline, a
 * script by argument); or the groups of one group script (see group-script.ts).
 */
interface Family {
  readonly name: string;
  readonly lua: string;
  /** The keys of one decision; 0 for a group script, whose entries each bring their own. */
  readonly numberOfKeys: number;
  /** Its plan keeps the compact layout (a call with an idempotent charge on a state with keys of its own sends one key more). */
  readonly compact: boolean;
  call: BatchCall | undefined;
  /** Batch calls of the family sent and not yet answered. */
  inFlight: number;
  /** Standalone: the one group. */
  single: Group | undefined;
  /** Cluster: the groups opened in this turn, by the first Redis key of their decisions. */
  readonly byKey: Map<string, Group>;
}

/** The decisions of one family (and on a Cluster, one Redis key) issued in this turn of the event loop after the first. */
interface Group {
  readonly family: Family;
  /** Cluster: the first Redis key of the group's decisions (its entry in `family.byKey`). */
  readonly key: string | undefined;
  /** A decision of this family and slot was sent alone in this turn: the next ones wait for the batch. */
  open: boolean;
  count: number;
  keys: string[];
  /** Keys of the group's entries so far (`numkeys` of its call). */
  keyCount: number;
  /** Decisions of the group's entries so far (a group script's entry holds several): `maxSize` bounds them. */
  decisions: number;
  /** The batch's arguments after the count (see batch-script.ts). */
  argv: string[];
  resolves: ((reply: unknown) => void)[];
  rejects: ((error: unknown) => void)[];
}

/**
 * Puts the decisions of one family that are issued in the same turn of the event loop into one script
 * call ({@link batchLua}); on a Cluster, those of one family on the same Redis keys (the bucket of the
 * compact layout, a limit's own keys otherwise), so that a batch holds the keys a single decision
 * holds: one slot, and while that slot migrates, never a batch split between two nodes that a single
 * decision would not be (Redis answers TRYAGAIN to a script whose keys are split). The compact
 * layout's buckets each have a slot of their own (nearly), so a batch of any one slot would hold one
 * bucket anyway. The first decision of a group in a turn is sent at once, alone, by the caller, unless
 * a batch of its family is in flight; the next ones (and that one, then) wait in the group until the
 * check phase of the loop (`setImmediate`), when every group's decisions go as one call, in the order
 * they were issued, after the first (one connection, or on a Cluster one slot's node, keeps the
 * order). So a decision issued alone on an idle store never waits, requests handled in the same I/O
 * phase (an HTTP server's) share a call, and under load, while batches are in flight, each turn's
 * decisions of a family are one call: waiting for the check phase costs them nothing then, since the
 * connection is busy anyway.
 *
 * A group that reaches `maxSize` decisions is sent at once and the next decisions start a new batch.
 * The batch call's own failure (a lost connection, a script error) rejects each of its decisions; a
 * decision's error inside the batch rejects that decision only.
 */
export class Batcher {
  private readonly families = new WeakMap<ScriptCalls | GroupScript, Family>();
  /** Batch scripts defined on the client: at most one per family. */
  scripts = 0;
  /** The groups opened in this turn, closed (and sent) by {@link flush}. */
  private opened: Group[] = [];

  /** `maxSize` >= 2: the most decisions one batch call carries. */
  constructor(
    private readonly adapter: ClientAdapter,
    private readonly maxSize: number,
    /** True on a Cluster: groups are per Redis key. */
    private readonly byKey: boolean,
  ) {}

  /**
   * The open group `plan`'s decision on `firstKey` (its first Redis key) must join, or `undefined` when
   * it is the first of its group in this turn and no batch of its family is in flight: then the caller
   * sends it alone, at once, and later ones join.
   */
  join(plan: ScriptPlan, firstKey: string): Group | undefined {
    return this.open(this.familyOf(plan), firstKey);
  }

  /** The open group of `family` on `firstKey` (Cluster), or undefined for the first of a turn with none in flight. */
  private open(family: Family, firstKey: string): Group | undefined {
    let group: Group | undefined;
    if (this.byKey) {
      group = family.byKey.get(firstKey);
      if (group === undefined) family.byKey.set(firstKey, (group = newGroup(family, firstKey)));
    } else group = family.single ??= newGroup(family, undefined);
    if (group.open) return group;
    group.open = true;
    if (this.opened.push(group) === 1) setImmediate(this.flush);
    return family.inFlight > 0 ? group : undefined;
  }

  /**
   * Sends one entry of the group script `script` (its `keys` and arguments: see group-script.ts;
   * `decisions` its members), batched by its first Redis key on a Cluster: in this turn's batch, or
   * alone, at once, when it is the first of the turn and none is in flight (as {@link join} decides);
   * resolves to its reply (the members' replies).
   */
  sendGroup(group: GroupCall): Promise<unknown> {
    const { script, keys, argv, decisions } = group;
    let family = this.families.get(script);
    if (family === undefined) {
      family = {
        name: script.name,
        lua: script.lua,
        numberOfKeys: 0,
        compact: true,
        call: undefined,
        inFlight: 0,
        single: undefined,
        byKey: new Map(),
      };
      this.families.set(script, family);
    }
    const batch = this.open(family, keys[0]!);
    if (batch !== undefined) return this.addEntry(batch, keys, argv, decisions);
    const alone = newGroup(family, undefined);
    const reply = this.addEntry(alone, keys, argv, decisions);
    this.send(alone);
    return reply;
  }

  /**
   * Adds a decision of `call` to `group` (`args`: its keys, then all its arguments, as a call by
   * argument sends them: see batch-script.ts); resolves to its reply.
   */
  add(group: Group, call: Call, args: string[]): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const k = keysOf(group.family.numberOfKeys, group.family.compact, call);
      for (let i = 0; i < k; i++) group.keys.push(args[i]!);
      group.keyCount += k;
      group.argv.push(call);
      for (let i = k; i < args.length; i++) group.argv.push(args[i]!);
      group.resolves.push(resolve);
      group.rejects.push(reject);
      group.count++;
      if (++group.decisions >= this.maxSize) this.send(group);
    });
  }

  /** Adds one entry of a group script to `group`: its `keys` and its arguments; resolves to its reply (the members' replies). */
  private addEntry(
    group: Group,
    keys: readonly string[],
    argv: readonly string[],
    decisions: number,
  ): Promise<unknown> {
    return new Promise((resolve, reject) => {
      for (const key of keys) group.keys.push(key);
      group.keyCount += keys.length;
      for (const arg of argv) group.argv.push(arg);
      group.resolves.push(resolve);
      group.rejects.push(reject);
      group.count++;
      group.decisions += decisions;
      if (group.decisions >= this.maxSize && group.open) this.send(group);
    });
  }

  private readonly flush = (): void => {
    const opened = this.opened;
    this.opened = [];
    for (const group of opened) {
      group.open = false;
      if (group.count > 0) this.send(group);
      if (group.key !== undefined) group.family.byKey.delete(group.key);
    }
  };

  private send(group: Group): void {
    const { family, count, keys, keyCount, argv, resolves, rejects } = group;
    group.count = 0;
    group.keyCount = 0;
    group.decisions = 0;
    group.keys = [];
    group.argv = [];
    group.resolves = [];
    group.rejects = [];
    if (family.call === undefined) {
      family.call = this.adapter.batchScript(family.name, family.lua);
      this.scripts++;
    }
    keys.push(String(count));
    for (const arg of argv) keys.push(arg);
    family.inFlight++;
    let answer: Promise<unknown>;
    try {
      answer = family.call(keyCount, keys);
    } catch (error) {
      // A client that throws instead of rejecting (this runs in setImmediate: a throw would be uncaught).
      answer = Promise.reject(error);
    }
    answer.then(
      (replies) => {
        family.inFlight--;
        if (!Array.isArray(replies) || replies.length !== count) {
          const error = new StoreError(
            `Redis batch: expected ${count} replies, got ${Array.isArray(replies) ? replies.length : typeof replies}`,
          );
          for (const reject of rejects) reject(error);
          return;
        }
        for (let i = 0; i < count; i++) {
          const reply = replies[i] as unknown;
          // A group's reply is its members' (read by the store); a decision's is checked here.
          if (family.numberOfKeys === 0) {
            resolves[i]!(reply);
            continue;
          }
          const bytes = Buffer.isBuffer(reply) ? reply.length : -1;
          if (bytes > 0 && isDecisionReply(reply as Buffer, 0)) resolves[i]!(reply);
          else if (bytes === 0) resolves[i]!(null);
          else rejects[i]!(new Error(Buffer.isBuffer(reply) ? reply.toString('utf8').trimEnd() : String(reply)));
        }
      },
      (error: unknown) => {
        family.inFlight--;
        for (const reject of rejects) reject(error);
      },
    );
  }

  private familyOf(plan: ScriptPlan): Family {
    let family = this.families.get(plan.calls);
    if (family === undefined) {
      const lua = batchLua(plan);
      const name = `rl_batch_${plan.script.name.replace(/-/g, '_')}_${createHash('sha1').update(lua).digest('hex').slice(0, 16)}`;
      family = {
        name,
        lua,
        numberOfKeys: plan.script.numberOfKeys,
        compact: plan.compact,
        call: undefined,
        inFlight: 0,
        single: undefined,
        byKey: new Map(),
      };
      this.families.set(plan.calls, family);
    }
    return family;
  }
}

function newGroup(family: Family, key: string | undefined): Group {
  return {
    family,
    key,
    open: false,
    count: 0,
    keys: [],
    keyCount: 0,
    decisions: 0,
    argv: [],
    resolves: [],
    rejects: [],
  };
}
