import {
  StoreClosedError,
  StoreError,
  notAsked,
  rolledBack,
  type Charge,
  type Charged,
  type TimedCharge,
} from '@rl/core/store';
import { chargedOf, isDecisionReply } from './decision-reply.js';
import { FAILED, NOT_ASKED, ROLLED_BACK } from './group-script.js';
import type { GroupCall, GroupScripts } from './group-scripts.js';
import { configurationArguments, type ScriptPlan } from './script-plan.js';
import type { ScriptSender, Values } from './script-sender.js';
import type { StoreKeys } from './store-keys.js';
import { callOf, chargeOperation, chargeValues, keysOf, widthOf, type Call } from './wire.js';

/** What a request group needs of its store. */
export interface GroupHost {
  readonly sender: ScriptSender;
  readonly keys: StoreKeys;
  readonly scripts: GroupScripts;
  planOf(algorithm: Charge['algorithm']): ScriptPlan;
  /** One charge alone, as `Store.charge` sends it. */
  alone(charge: Charge, now: number | undefined): Promise<Charged>;
}

/** A charge of the group, ready to send: its call and values (src/wire.ts), its keys and slot, and which answer is its. */
interface Member {
  readonly charge: Charge;
  readonly now: number | undefined;
  readonly plan: ScriptPlan;
  readonly call: Call;
  readonly values: Values;
  /** Its keys, then the field in the compact layout. */
  readonly start: string[];
  readonly slot: number;
  /** Its answer's resolve and reject in the group's `resolves` and `rejects`. */
  readonly answer: number;
}

/**
 * The charges of one request on a Redis store, decided together (see `Store.chargeAll`): a value made
 * per call from its charges, never kept by the store. {@link send} sends those of one slot (every one,
 * on a standalone Redis) as one group of a group script (group-script.ts), all-or-nothing; a slot with
 * one charge sends it alone, as `Store.charge` does. A charge that cannot be sent (a closed store, a
 * malformed idempotent charge) fails alone; a lease limit's is answered alone (it reports its state).
 */
export class RequestGroup {
  /**
   * One answer per charge, in order, each settling (or failing) on its own. Made by `map`, whose array
   * V8 never allocates in the old generation by itself (no allocation site: see {@link release}), as a
   * literal filled by `push` could be after a cold start: held there, it would keep every answer's
   * promise and decision alive through young collections.
   */
  readonly answers: readonly Promise<Charged>[];
  private readonly members: Member[] = [];
  /** The members' answers' resolves and rejects (see `Member.answer`). */
  private readonly resolves: (((charged: Charged) => void) | undefined)[] = [];
  private readonly rejects: (((error: unknown) => void) | undefined)[] = [];
  /** The executor of each member's answer: one per group, not one per member. */
  private readonly hold: (resolve: (charged: Charged) => void, reject: (error: unknown) => void) => void;

  constructor(
    private readonly host: GroupHost,
    charges: readonly TimedCharge[],
    /** The longest an enforced charge may hold the request, in ms (`Infinity`: no bound). */
    private readonly holdMs: number,
  ) {
    this.hold = (resolve, reject) => {
      this.resolves.push(resolve);
      this.rejects.push(reject);
    };
    this.answers = charges.map(({ charge, now }) => this.join(charge, now));
  }

  /** Sends the group's charges: one group call per slot, a slot's lone charge alone. Call once. */
  send(): void {
    const members = this.members;
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

  /** `charge` as a member of the group (its answer once the group is sent), or answered alone. */
  private join(charge: Charge, now: number | undefined): Promise<Charged> {
    try {
      const { sender, keys } = this.host;
      if (sender.closed) throw new StoreClosedError();
      // A lease limit's charge reports its state (see `RedisStore.charge`): never part of a group.
      if (charge.algorithm.stateKind === 'leases') return this.host.alone(charge, now);
      const plan = this.host.planOf(charge.algorithm);
      const values = chargeValues(charge, now);
      const call = callOf(chargeOperation(charge), values);
      const start = keys.start(plan, charge.key, call);
      const slot = keys.slotOf(plan, charge.key, start[0]!);
      this.members.push({ charge, now, plan, call, values, start, slot, answer: this.resolves.length });
      return new Promise(this.hold);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private alone(member: Member): void {
    const resolve = this.resolves[member.answer]!;
    const reject = this.rejects[member.answer]!;
    this.release(member);
    try {
      this.host.alone(member.charge, member.now).then(resolve, reject);
    } catch (error) {
      reject(error);
    }
  }

  /** The members of one slot as one group: keys in order, then per member its family, flag, call and arguments (see group-script.ts). */
  private together(members: Member[]): void {
    // Each member's family: its plan's script calls, numbered from 1 in the order first met.
    const families: ScriptPlan[] = [];
    const familyOf: number[] = [];
    for (const m of members) {
      let at = 0;
      while (at < families.length && families[at]!.calls !== m.plan.calls) at++;
      if (at === families.length) families.push(m.plan);
      familyOf.push(at + 1);
    }
    const script = this.host.scripts.of(families);
    if (script === undefined) {
      for (const member of members) this.alone(member);
      return;
    }
    const keys: string[] = [];
    const argv: string[] = [String(members.length), Number.isFinite(this.holdMs) ? String(this.holdMs) : ''];
    for (let i = 0; i < members.length; i++) {
      const m = members[i]!;
      const k = keysOf(m.plan.script.numberOfKeys, m.plan.compact, m.call);
      for (let j = 0; j < k; j++) keys.push(m.start[j]!);
      // A dry-run charge (`enforced: false`) names its family negated: its denial does not deny the group.
      argv.push(familyArgument(m.charge.enforced === false ? -familyOf[i]! : familyOf[i]!), m.call);
      for (let j = k; j < m.start.length; j++) argv.push(m.start[j]!);
      const width = widthOf(m.call);
      for (let j = 0; j < width; j++) argv.push(m.values[j] ?? '');
      if (m.plan.byArgument) for (const value of configurationArguments(m.plan, m.values)) argv.push(value);
    }
    this.run({ script, keys, argv, decisions: members.length }, members);
  }

  private run(group: GroupCall, members: Member[]): void {
    let answer: Promise<unknown>;
    try {
      answer = this.host.sender.sendGroup(group);
    } catch (error) {
      answer = Promise.reject(error);
    }
    answer.then(
      (replies) => this.answered(members, replies),
      (error: unknown) => {
        for (const m of members) this.rejects[m.answer]!(this.host.sender.failure(m.plan, error));
        this.releaseAll(members);
      },
    );
  }

  /**
   * Drops what the group holds for `member` once its answer is settled (or handed to the promise that
   * settles it). V8 may allocate a group's arrays in the old generation once their objects have
   * survived young collections (allocation-site pretenuring: a cold start's slow first calls are
   * enough); an old array that still held a settled member's callbacks would keep them, and the
   * promise, charge and decision they reach, alive through every young collection until a full one,
   * promoted on the way (bench/README.md, "The grouped path in the old generation").
   */
  private release(member: Member): void {
    this.resolves[member.answer] = undefined;
    this.rejects[member.answer] = undefined;
  }

  /** {@link release} for each of `members`, then the list itself emptied (see there). */
  private releaseAll(members: Member[]): void {
    for (const m of members) this.release(m);
    members.length = 0;
  }

  /** Each member's answer from its reply (see group-script.ts): charged as it says, rolled back, not asked, or its error. */
  private answered(members: Member[], replies: unknown): void {
    const { resolves, rejects } = this;
    if (!Array.isArray(replies) || replies.length !== members.length) {
      const error = new StoreError(
        `Redis group: expected ${members.length} replies, got ${Array.isArray(replies) ? replies.length : typeof replies}`,
      );
      for (const m of members) rejects[m.answer]!(error);
      return this.releaseAll(members);
    }
    for (let i = 0; i < members.length; i++) {
      const m = members[i]!;
      const reply = replies[i] as unknown;
      const bytes = Buffer.isBuffer(reply) ? reply.length : -1;
      const tag = bytes > 0 ? (reply as Buffer)[0] : -1;
      if (bytes > 0 && isDecisionReply(reply as Buffer, 0))
        resolves[m.answer]!(chargedOf(reply as Buffer, 0, m.charge));
      else if (tag === ROLLED_BACK && isDecisionReply(reply as Buffer, 1))
        resolves[m.answer]!(rolledBack(chargedOf(reply as Buffer, 1, m.charge)));
      else if (tag === NOT_ASKED && bytes === 1) resolves[m.answer]!(notAsked(m.charge));
      else if (tag === FAILED)
        rejects[m.answer]!(
          this.host.sender.failure(m.plan, new Error((reply as Buffer).toString('utf8', 1).trimEnd())),
        );
      else rejects[m.answer]!(new StoreError(`Redis group: an unexpected reply for ${m.plan.script.name}`));
    }
    this.releaseAll(members);
  }
}

/** The argument naming family `n` (negative: a dry-run member), the usual few made once. */
const FAMILY_ARGUMENTS = Array.from({ length: 16 }, (_, i) => String(i + 1));
function familyArgument(n: number): string {
  return n > 0 && n <= FAMILY_ARGUMENTS.length ? FAMILY_ARGUMENTS[n - 1]! : String(n);
}
