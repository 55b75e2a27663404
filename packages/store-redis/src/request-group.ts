import { StoreClosedError, StoreError, makeDecision, markNotAsked, markRolledBack, type Algorithm, type ChargeGroup, type Decision } from '@rl/core/store';
import { isDecisionReply } from './decision-reply.js';
import { FAILED, NOT_ASKED, ROLLED_BACK } from './group-script.js';
import type { GroupScript, GroupScripts } from './group-scripts.js';
import { configurationArguments, type ScriptPlan } from './script-plan.js';
import type { StoreKeys } from './store-keys.js';
import { keysOf, OPERATION_WIDTH } from './wire.js';

/** What a request group needs of its store. */
export interface GroupHost {
  /** True once the store is closed (a consume then throws `StoreClosedError`). */
  isClosed(): boolean;
  readonly keys: StoreKeys;
  readonly scripts: GroupScripts;
  planOf(algorithm: Algorithm): ScriptPlan;
  /** One consume alone, as the store sends it outside a group. */
  alone(key: string, algorithm: Algorithm, op: ChargeOp, values: readonly (string | undefined)[]): Promise<Decision>;
  /** Runs one group of `script` (`decisions`: its members): batched with others of the turn when batching is on; resolves to its members' replies. */
  run(script: GroupScript, keys: readonly string[], argv: readonly string[], decisions: number): Promise<unknown>;
  /** The six doubles of a decision at `offset` of `reply`, as a decision of `algorithm`. */
  decision(reply: Buffer, offset: number, algorithm: Algorithm): Decision;
  /** A failure of `plan`'s script, as the store rejects with it. */
  failure(plan: ScriptPlan, error: unknown): unknown;
}

/** The operations a group decides: a consume, a reservation. */
export type ChargeOp = 'c' | 'v' | 'i' | 'j';

interface Member {
  readonly key: string;
  readonly algorithm: Algorithm;
  readonly plan: ScriptPlan;
  readonly op: ChargeOp;
  readonly values: readonly (string | undefined)[];
  readonly enforced: boolean;
  /** Its keys, then the field in the compact layout. */
  readonly start: string[];
  readonly slot: number;
  readonly resolve: (decision: Decision) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * The consumes of one request on a Redis store (see `Store.group`): collected while open, then sent
 * at {@link close}, those of one slot (every one, on a standalone Redis) as one group of a group script
 * (group-script.ts), all-or-nothing; a slot with one consume sends it alone, as outside a group.
 */
export class RequestGroup implements ChargeGroup {
  enforced = true;
  private members: Member[] = [];
  private closed = false;

  constructor(
    private readonly host: GroupHost,
    private readonly holdMs: number,
    /** Called once, at close: the store stops routing consumes here. */
    private readonly ended: (group: RequestGroup) => void,
  ) {}

  /** A consume of the request: decided when the group closes. */
  add(key: string, algorithm: Algorithm, op: ChargeOp, values: readonly (string | undefined)[]): Promise<Decision> {
    if (this.host.isClosed()) throw new StoreClosedError();
    const plan = this.host.planOf(algorithm);
    const start = this.host.keys.start(plan, key, op);
    const slot = this.host.keys.slotOf(plan, key, start[0]!);
    const enforced = this.enforced;
    return new Promise((resolve, reject) => {
      this.members.push({ key, algorithm, plan, op, values, enforced, start, slot, resolve, reject });
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.ended(this);
    const members = this.members;
    this.members = [];
    if (members.length === 0) return;
    if (members.length === 1) return this.alone(members[0]!);
    // One slot (every request on a standalone Redis, a hash-tagged one on a Cluster): one group, no table.
    const slot = members[0]!.slot;
    if (members.every((m) => m.slot === slot)) return this.together(members);
    const bySlot = new Map<number, Member[]>();
    for (const member of members) {
      const part = bySlot.get(member.slot);
      if (part === undefined) bySlot.set(member.slot, [member]);
      else part.push(member);
    }
    for (const part of bySlot.values()) {
      if (part.length === 1) this.alone(part[0]!);
      else this.together(part);
    }
  }

  private alone(member: Member): void {
    let answer: Promise<Decision>;
    try {
      answer = this.host.alone(member.key, member.algorithm, member.op, member.values);
    } catch (error) {
      return member.reject(error);
    }
    answer.then(member.resolve, member.reject);
  }

  /** The members of one slot as one group: keys in order, then per member its family, flag, operation and arguments (see group-script.ts). */
  private together(members: Member[]): void {
    const families: ScriptPlan[] = [];
    const familyOf = members.map((m) => {
      let at = families.findIndex((plan) => plan.calls === m.plan.calls);
      if (at === -1) at = families.push(m.plan) - 1;
      return at + 1;
    });
    const script = this.host.scripts.of(families);
    if (script === undefined) {
      for (const member of members) this.alone(member);
      return;
    }
    const keys: string[] = [];
    const argv: string[] = [String(members.length), Number.isFinite(this.holdMs) ? String(this.holdMs) : ''];
    members.forEach((m, i) => {
      const k = keysOf(m.plan.script.numberOfKeys, m.plan.compact, m.op);
      for (let j = 0; j < k; j++) keys.push(m.start[j]!);
      argv.push(familyArgument(m.enforced ? familyOf[i]! : -familyOf[i]!), m.op);
      for (let j = k; j < m.start.length; j++) argv.push(m.start[j]!);
      for (let j = 0; j < OPERATION_WIDTH[m.op]; j++) argv.push(m.values[j] ?? '');
      if (m.plan.byArgument) for (const value of configurationArguments(m.plan, m.values)) argv.push(value);
    });
    let answer: Promise<unknown>;
    try {
      answer = this.host.run(script, keys, argv, members.length);
    } catch (error) {
      answer = Promise.reject(error);
    }
    answer.then(
      (replies) => this.answered(members, replies),
      (error: unknown) => {
        for (const m of members) m.reject(this.host.failure(m.plan, error));
      },
    );
  }

  private answered(members: readonly Member[], replies: unknown): void {
    if (!Array.isArray(replies) || replies.length !== members.length) {
      const error = new StoreError(`Redis group: expected ${members.length} replies, got ${Array.isArray(replies) ? replies.length : typeof replies}`);
      for (const m of members) m.reject(error);
      return;
    }
    members.forEach((m, i) => {
      const reply = replies[i] as unknown;
      const bytes = Buffer.isBuffer(reply) ? reply.length : -1;
      const tag = bytes > 0 ? (reply as Buffer)[0] : -1;
      if (bytes > 0 && isDecisionReply(reply as Buffer, 0)) m.resolve(this.host.decision(reply as Buffer, 0, m.algorithm));
      else if (tag === ROLLED_BACK && isDecisionReply(reply as Buffer, 1)) m.resolve(markRolledBack(this.host.decision(reply as Buffer, 1, m.algorithm)));
      else if (tag === NOT_ASKED && bytes === 1) m.resolve(markNotAsked(makeDecision(false, m.algorithm.limit, 0, 0, 0, 0, m.algorithm.policy, 0)));
      else if (tag === FAILED) m.reject(this.host.failure(m.plan, new Error((reply as Buffer).toString('utf8', 1).trimEnd())));
      else m.reject(new StoreError(`Redis group: an unexpected reply for ${m.plan.script.name}`));
    });
  }
}

/** The argument naming family `n` (negative: a dry-run member), the usual few made once. */
const FAMILY_ARGUMENTS = Array.from({ length: 16 }, (_, i) => String(i + 1));
function familyArgument(n: number): string {
  return n > 0 && n <= FAMILY_ARGUMENTS.length ? FAMILY_ARGUMENTS[n - 1]! : String(n);
}
