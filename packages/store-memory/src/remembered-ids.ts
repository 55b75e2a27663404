import { ceilMs, type Algorithm, type Charged, type Decision, type IdempotentCharge } from '@rl/core/store';
import { ObjectTable, type ObjectEntry } from './tables.js';

/**
 * One remembered admitting decision of an idempotent charge: its request's digested id and
 * fingerprint, when it is forgotten, its `at` and delay (its slot), and how many times it has been
 * answered again (at most the charge's `maxReplays`).
 */
export interface IdRecord {
  readonly id: string;
  readonly fingerprint: string;
  readonly expiresAt: number;
  readonly at: number;
  readonly delayMs: number;
  readonly replays: number;
}

/**
 * The ids of idempotent charges each key remembers, per key and algorithm kind (one entry, at most
 * `maxIds` records, oldest first), in the store's CLOCK eviction and sweeping like any state: an
 * entry counts one of `maxKeys` per id it holds, and expires with its newest record. Times are the
 * store's (the `now` of the decisions).
 */
export class RememberedIds extends ObjectTable<IdRecord[]> {
  override weight(entry: ObjectEntry<IdRecord[]>): number {
    return entry.state.length;
  }

  /** The name of `key`'s remembered ids for `algorithm`'s kind (a storage key alone: it has no scope of its own). */
  static slot(key: string, algorithm: Algorithm): string {
    return `${key}\u0000#i:${algorithm.stateTag}`;
  }

  /**
   * The live record of `charge.id` at `now`, or undefined: a record of another fingerprint is a
   * conflict (`conflict` true), the same fingerprint a replay.
   */
  find(slot: string, charge: IdempotentCharge, now: number): IdRecord | undefined {
    const entry = this.index.get(undefined, slot);
    if (entry === undefined) return undefined;
    entry.touched = true;
    return entry.state.find((r) => r.id === charge.id && r.expiresAt > now);
  }

  /** Counts one more replay of `found` (a live record of `slot`, see {@link find}), in its place among the key's records. */
  replayed(slot: string, found: IdRecord): void {
    const records = this.index.get(undefined, slot)!.state;
    records[records.indexOf(found)] = { ...found, replays: found.replays + 1 };
  }

  /**
   * Remembers `decision` (an admitting one) under `charge.id`, its replays at 0, forgetting the
   * records that expired, the id's own (one that has used its replays), and, past `charge.maxIds`, the
   * oldest. Returns the change in the number of records (for the store's count of keys).
   */
  remember(slot: string, charge: IdempotentCharge, decision: Decision, now: number): number {
    const record: IdRecord = {
      id: charge.id,
      fingerprint: charge.fingerprint,
      expiresAt: now + charge.ttlMs,
      at: decision.at,
      delayMs: decision.delayMs,
      replays: 0,
    };
    const entry = this.index.get(undefined, slot);
    if (entry === undefined) {
      this.index.set(undefined, slot, { state: [record], touched: false, deadline: record.expiresAt });
      return 1;
    }
    const before = entry.state.length;
    const live = entry.state.filter((r) => r.expiresAt > now && r.id !== charge.id);
    while (live.length >= charge.maxIds) live.shift();
    live.push(record);
    entry.state = live;
    entry.deadline = Math.max(entry.deadline, record.expiresAt);
    return live.length - before;
  }

  /** Forgets `id` (its charge was given back); returns the change in the number of records. */
  forget(slot: string, id: string): number {
    const entry = this.index.get(undefined, slot);
    if (entry === undefined) return 0;
    const before = entry.state.length;
    entry.state = entry.state.filter((r) => r.id !== id);
    if (entry.state.length === 0) this.index.take(undefined, slot);
    return entry.state.length - before;
  }

  /** Forgets every id of `slot` (its key was reset); returns the change in the number of records. */
  forgetAll(slot: string): number {
    const entry = this.index.get(undefined, slot);
    if (entry === undefined) return 0;
    this.index.take(undefined, slot);
    return -entry.state.length;
  }
}

/** Where an idempotent charge is remembered: the key's slot among the ids ({@link RememberedIds.slot}), the charge's id and fingerprint, and the store's time (ms). */
export interface IdempotentCall {
  readonly slot: string;
  readonly idempotency: IdempotentCharge;
  readonly now: number;
}

/** What {@link decideIdempotent} asks the store for, each in the charge's one synchronous step. */
export interface IdempotentSteps {
  /** The block's denial while the key is blocked (a ban, a lockout), from a step that records nothing; undefined otherwise. */
  blocked(): Decision | undefined;
  /** The charge, through the block (its denial starts a lockout). */
  charge(): Decision;
  /** A step of cost 0 that records nothing: the numbers of now, for a replay. */
  peek(): Decision;
  /** Evicts before a record is added when the store is full. */
  room(): void;
  /** The change in the number of records (for the store's count of keys). */
  recorded(change: number): void;
}

/**
 * An idempotent charge on a local store, in one synchronous step. First `blocked`: while the key is
 * blocked (a ban, a lockout) its block's denial, from a step that records nothing (what a charge
 * without an id gets), is the answer (`took: 'charged'`), and the ids are neither read nor written: a
 * ban or a lockout outranks a replay, and the record stays as it was for a retry once the block ends.
 * Then the remembered decision of the same id and fingerprint, while it has been answered again fewer
 * than `maxReplays` times, is answered again (`took: 'replayed'`; `peek` gives the numbers of now;
 * allowed, with the original's `at` and what is left of its delay), charging nothing, and counts the
 * replay; otherwise `charge` decides (through the block, so that its denial starts a lockout; a
 * conflict answers `conflict: true`, a record that has used its replays leaves the charge as any
 * other), and an admitting decision that is no conflict is remembered afresh (`idempotencyId` set),
 * `room` asked first when it adds a record (a replay adds none, nor does a spent record replaced: the
 * eviction may take this key's own ids). `recorded` is told the change in the number of records.
 */
export function decideIdempotent(ids: RememberedIds, call: IdempotentCall, decide: IdempotentSteps): Charged {
  const { slot, idempotency, now } = call;
  const blocked = decide.blocked();
  if (blocked !== undefined) return { decision: blocked, took: 'charged' };
  const found = ids.find(slot, idempotency, now);
  const same = found !== undefined && found.fingerprint === idempotency.fingerprint;
  if (same && found.replays < idempotency.maxReplays) {
    ids.replayed(slot, found);
    // Rounded as the Redis store rounds its exact delay (float noise forgiven).
    const delayMs = ceilMs(found.at + found.delayMs - now);
    return { decision: { ...decide.peek(), allowed: true, retryAfterMs: 0, delayMs, at: found.at }, took: 'replayed' };
  }
  const decision = decide.charge();
  if (found !== undefined && !same) return { decision, took: 'charged', conflict: true };
  if (!decision.allowed) return { decision, took: 'charged' };
  if (found === undefined) decide.room();
  decide.recorded(ids.remember(slot, idempotency, decision, now));
  return { decision, took: 'charged', idempotencyId: idempotency.id };
}
