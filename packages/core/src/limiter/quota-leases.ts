import type { Algorithm } from '../algorithm.js';
import type { Clock } from '../clock.js';
import { makeDecision, type Decision, type Policy } from '../decision.js';
import type { MaybePromise } from '../store/interface.js';
import { unrefTimer, type TimerHandle, type Timers } from '../timers.js';
import { configurationOf } from './deny-cache.js';
import { leasable, type LeaseConfig } from './lease-options.js';

/** What a limiter's core does for its quota leases (see `LimiterCore`). */
export interface LeaseHost {
  /** The limiter's local clock (ms). */
  readonly clock: Clock;
  readonly timers: Timers;
  /** Charges a block of `units` in the store (through the deny cache and the guard), heard by no observer as a decision. */
  takeBlock(storeKey: string, algorithm: Algorithm, units: number): MaybePromise<Decision>;
  /** Charges a request's `cost` in the store alone, as a limiter without leases does (observed). */
  chargeAlone(storeKey: string, algorithm: Algorithm, cost: number): MaybePromise<Decision>;
  /** Gives `units` back to the store at the time `chargedAt` they were charged; never rejects. */
  giveBack(storeKey: string, algorithm: Algorithm, units: number, chargedAt: number): MaybePromise<void>;
  /** A request admitted from a block: the observers hear its decision. */
  spent(decision: Decision, cost: number, storeKey: string): void;
  /** A block the failure policy answered (the store failed or timed out): a late grant of the store is given back. */
  notServed(decision: Decision): void;
  /** Units taken from (`leased`) or given back to (`returned`) the shared quota. */
  counted(action: 'leased' | 'returned', units: number): void;
  /** The store's `watchResets`, when it has one: resets made anywhere, so that a block of a reset state is not spent. */
  readonly watchResets: ((listener: (storageKey: string | undefined) => void) => void) | undefined;
}

/** Units of one block still to spend, until `until` (local clock). */
interface Block {
  left: number;
  readonly until: number;
  /** The store's time of the block's charge: a give-back's `chargedAt`, and the `at` of the decisions spent from it. */
  readonly at: number;
  /** True when `until` is the lease's ttl, before the algorithm ends the block itself: unused units are then given back. */
  readonly returnable: boolean;
}

/** The blocks of one key and what the store said with the last. */
interface LeaseEntry {
  readonly algorithm: Algorithm;
  readonly configuration: string;
  /** Live blocks, the first to end first. */
  blocks: Block[];
  /** The store's `remaining` after the last block (every block leased out excluded). */
  remaining: number;
  limit: number;
  policy: Policy;
  /** When the key's state resets (local clock), from the last block. */
  resetAt: number;
  /** The block asked for now, if any: one at a time per key. */
  fetching: Promise<void> | undefined;
  /** No block is asked before this time (local): the last was denied, or the shared quota is gone. */
  noBlockUntil: number;
  timer: TimerHandle | undefined;
}

/**
 * The quota leases of one limiter (option `lease`): per storage key, blocks of `units` charged in
 * the store, spent locally by the requests of that key. The next block is asked for while half a
 * block is left; a request costing more than a block, or arriving when no block can be had, is
 * charged alone. A block ends at the lease's ttl or sooner where its algorithm says
 * (`Algorithm.leaseHoldMs`); unused units of a block ended by the ttl are given back (a timer, which
 * never keeps the process alive), and so is everything held at {@link close} and once a request's
 * own charge is denied (the shared quota is gone). Times are the limiter's local clock: a block ends
 * by the time the store's answer says, counted from when it was asked for (never later than in the
 * store's clock).
 */
export class QuotaLeases {
  private readonly entries = new Map<string, LeaseEntry>();
  private closed = false;
  /** What the store calls on a reset anywhere; held here because the store holds it weakly. Subscribed at the first block. */
  private resetListener: ((storageKey: string | undefined) => void) | undefined;

  constructor(
    private readonly config: LeaseConfig,
    private readonly host: LeaseHost,
  ) {}

  /** The decision for `cost` units of `storeKey`: from a block, or charged in the store. */
  charge(storeKey: string, cost: number, algorithm: Algorithm): MaybePromise<Decision> {
    const entry = this.closed || cost > this.config.units || !leasable(algorithm, this.config.units) ? undefined : this.entryOf(storeKey, algorithm);
    if (entry === undefined) return this.host.chargeAlone(storeKey, algorithm, cost);
    const now = this.host.clock();
    this.expire(entry, storeKey, now);
    const spent = this.spend(entry, storeKey, cost, now);
    if (spent !== undefined) return spent;
    // Behind the block asked for already: try again once it is in.
    if (entry.fetching !== undefined) return entry.fetching.then(() => this.charge(storeKey, cost, algorithm));
    if (now < entry.noBlockUntil) return this.alone(entry, storeKey, cost);
    const fetched = this.fetch(entry, storeKey, now);
    if (fetched instanceof Promise) return fetched.then(() => this.charge(storeKey, cost, algorithm));
    return this.spend(entry, storeKey, cost, this.host.clock()) ?? this.alone(entry, storeKey, cost);
  }

  /**
   * Takes back `cost` units given back for a request of `storeKey` admitted at `decision.at` (a later
   * limit denied it, its response is not counted): into a live block charged at that time, as units
   * charged then in the store (a decision spent from it has its `at`; one charged alone in the same
   * instant is the same charge to the store). False otherwise: the caller gives back in the store.
   * Found by time, not by the decision object: a mark per decision (a weak map) cost more than the
   * rest of a leased decision.
   */
  refund(storeKey: string, cost: number, decision: Decision): boolean {
    const entry = this.entries.get(storeKey);
    if (entry === undefined || this.closed || cost > this.config.units) return false;
    const now = this.host.clock();
    for (const block of entry.blocks) {
      if (block.at !== decision.at || block.until <= now) continue;
      block.left += cost;
      return true;
    }
    return false;
  }

  /**
   * Forgets the blocks of `storeKey` (undefined: of every key) without giving them back: its state
   * was reset (here, or anywhere the store tells of), so its next request takes a block of the new state.
   */
  forget(storeKey: string | undefined): void {
    for (const [key, entry] of storeKey === undefined ? this.entries : ([[storeKey, this.entries.get(storeKey)]] as const)) {
      if (entry === undefined) continue;
      if (entry.timer !== undefined) this.host.timers.clearTimeout(entry.timer);
      entry.blocks = [];
      this.entries.delete(key);
    }
  }

  /** Gives back every unit held and stops leasing (later charges go to the store); resolves once the store has them. */
  async close(): Promise<void> {
    this.closed = true;
    const backs: MaybePromise<void>[] = [];
    for (const [storeKey, entry] of this.entries) {
      if (entry.timer !== undefined) this.host.timers.clearTimeout(entry.timer);
      for (const block of entry.blocks) backs.push(this.giveBack(entry, storeKey, block));
      entry.blocks = [];
    }
    this.entries.clear();
    await Promise.all(backs);
  }

  /** The entry of `storeKey` for `algorithm`'s configuration (a plan that changed gives back the old one's blocks); undefined when `maxKeys` hold blocks. */
  private entryOf(storeKey: string, algorithm: Algorithm): LeaseEntry | undefined {
    const configuration = configurationOf(algorithm);
    const entry = this.entries.get(storeKey);
    if (entry !== undefined && entry.configuration === configuration) return entry;
    if (entry !== undefined) this.drop(entry, storeKey);
    else if (this.entries.size >= this.config.maxKeys && !this.evictIdle()) return undefined;
    const fresh: LeaseEntry = { algorithm, configuration, blocks: [], remaining: 0, limit: algorithm.limit, policy: algorithm.policy, resetAt: 0, fetching: undefined, noBlockUntil: -Infinity, timer: undefined };
    this.entries.set(storeKey, fresh);
    return fresh;
  }

  /** Forgets the oldest key when it holds nothing (no block, none asked for); false when it still does. */
  private evictIdle(): boolean {
    const [storeKey, oldest] = this.entries.entries().next().value!;
    if (oldest.blocks.length > 0 || oldest.fetching !== undefined) return false;
    if (oldest.timer !== undefined) this.host.timers.clearTimeout(oldest.timer);
    this.entries.delete(storeKey);
    return true;
  }

  /** `cost` units from the entry's blocks, the first to end first, with the decision the observers hear; undefined when they hold less. */
  private spend(entry: LeaseEntry, storeKey: string, cost: number, now: number): Decision | undefined {
    const blocks = entry.blocks;
    let held = 0;
    for (let i = 0; i < blocks.length; i++) held += blocks[i]!.left;
    if (held < cost) return undefined;
    let need = cost;
    let from = blocks[0]!;
    // The common case, one block that holds the cost, allocates nothing but the decision.
    while (need > 0 && blocks.length > 0) {
      from = blocks[0]!;
      const taken = Math.min(from.left, need);
      from.left -= taken;
      need -= taken;
      if (from.left <= 0) blocks.shift();
    }
    held -= cost;
    const decision = makeDecision(true, entry.limit, Math.floor(entry.remaining + held), Math.max(0, Math.ceil(entry.resetAt - now)), 0, 0, entry.policy, from.at);
    this.host.spent(decision, cost, storeKey);
    // Half a block left: the next is asked for now, so that requests do not wait for it at the boundary.
    if (held < this.config.units / 2 && entry.fetching === undefined && now >= entry.noBlockUntil) void this.fetch(entry, storeKey, now);
    return decision;
  }

  /** Asks the store for a block of the entry's key (asked at `sentAt`) and keeps it when granted; never rejects. */
  private fetch(entry: LeaseEntry, storeKey: string, sentAt: number): MaybePromise<void> {
    let answer: MaybePromise<Decision>;
    try {
      answer = this.host.takeBlock(storeKey, entry.algorithm, this.config.units);
    } catch {
      // A bad clock reading, say: no block now; the request is charged alone, which reports it.
      entry.noBlockUntil = sentAt + 1;
      return;
    }
    if (!(answer instanceof Promise)) return this.received(entry, storeKey, answer, sentAt);
    const fetching = answer.then(
      (d) => {
        entry.fetching = undefined;
        this.received(entry, storeKey, d, sentAt);
      },
      () => {
        entry.fetching = undefined;
        entry.noBlockUntil = sentAt + 1;
      },
    );
    entry.fetching = fetching;
    return fetching;
  }

  /** The store's answer `d` to a block asked at `sentAt`: a granted block is kept; otherwise none is asked for until the answer's retry time. */
  private received(entry: LeaseEntry, storeKey: string, d: Decision, sentAt: number): void {
    if (d.reason !== undefined) this.host.notServed(d);
    if (!d.allowed || d.reason !== undefined || d.delayMs > 0 || this.entries.get(storeKey) !== entry) {
      entry.noBlockUntil = sentAt + Math.max(1, d.retryAfterMs);
      // A block granted to an entry dropped meanwhile (closed, a plan changed) goes back at once.
      if (d.allowed && d.reason === undefined) void this.host.giveBack(storeKey, entry.algorithm, this.config.units, d.at);
      return;
    }
    const units = this.config.units;
    const holdMs = entry.algorithm.leaseHoldMs(d.at, units);
    const returnable = this.config.ttlMs < holdMs;
    entry.blocks.push({ left: units, until: sentAt + (returnable ? this.config.ttlMs : holdMs), at: d.at, returnable });
    entry.blocks.sort((a, b) => a.until - b.until);
    entry.remaining = d.remaining;
    entry.limit = d.limit;
    entry.policy = d.policy;
    entry.resetAt = sentAt + d.resetMs;
    this.host.counted('leased', units);
    this.schedule(entry, storeKey);
    if (this.resetListener === undefined && this.host.watchResets !== undefined) {
      // A key reset anywhere drops its blocks. "Resets may have been missed" (a (re)subscription, also
      // the first) drops nothing: the blocks would be lost to the quota, and any block ends at its ttl.
      this.resetListener = (key) => key !== undefined && this.forget(key);
      this.host.watchResets(this.resetListener);
    }
  }

  /** Charges the request alone; a denial of its own cost says the shared quota is gone: what the key holds goes back. */
  private alone(entry: LeaseEntry, storeKey: string, cost: number): MaybePromise<Decision> {
    const answer = this.host.chargeAlone(storeKey, entry.algorithm, cost);
    const settle = (d: Decision): Decision => {
      if (!d.allowed && d.reason === undefined) {
        entry.noBlockUntil = this.host.clock() + Math.max(1, d.retryAfterMs);
        for (const block of entry.blocks) void this.giveBack(entry, storeKey, block);
        entry.blocks = [];
      }
      return d;
    };
    return answer instanceof Promise ? answer.then(settle) : settle(answer);
  }

  /** Drops the blocks that have ended by `now`, giving back the unused units of those the ttl ended. */
  private expire(entry: LeaseEntry, storeKey: string, now: number): void {
    const blocks = entry.blocks;
    if (blocks.length === 0 || blocks[0]!.until > now) return;
    for (const block of blocks) if (block.until <= now && block.returnable) void this.giveBack(entry, storeKey, block);
    entry.blocks = blocks.filter((block) => block.until > now);
  }

  /** Gives a block's unused units back (none left: nothing to do). */
  private giveBack(entry: LeaseEntry, storeKey: string, block: Block): MaybePromise<void> {
    const units = block.left;
    block.left = 0;
    if (units <= 0) return undefined;
    this.host.counted('returned', units);
    return this.host.giveBack(storeKey, entry.algorithm, units, block.at);
  }

  /** Gives back every block of a dropped entry (a plan that changed) and forgets it. */
  private drop(entry: LeaseEntry, storeKey: string): void {
    if (entry.timer !== undefined) this.host.timers.clearTimeout(entry.timer);
    for (const block of entry.blocks) void this.giveBack(entry, storeKey, block);
    entry.blocks = [];
    this.entries.delete(storeKey);
  }

  /** Arms the entry's one timer for its first block's end: a live holder gives back at the ttl, and forgets a key that holds nothing. */
  private schedule(entry: LeaseEntry, storeKey: string): void {
    if (entry.timer !== undefined || entry.blocks.length === 0) return;
    const wait = Math.max(1, Math.ceil(entry.blocks[0]!.until - this.host.clock()));
    entry.timer = unrefTimer(
      this.host.timers.setTimeout(() => {
        entry.timer = undefined;
        this.expire(entry, storeKey, this.host.clock());
        if (entry.blocks.length > 0) this.schedule(entry, storeKey);
        else if (entry.fetching === undefined && this.entries.get(storeKey) === entry) this.entries.delete(storeKey);
      }, wait),
    );
  }
}
