import type { Algorithm } from '../algorithm.js';
import { makeDecision, type Decision } from '../decision.js';
import type { Charge, MaybePromise } from '../store/interface.js';
import type { ChargeAnswer, ChargeNext } from './charge-path.js';
import { configurationOf } from './deny-cache.js';
import { held, LeaseBook } from './lease-book.js';
import type { Block, LeaseEntry, LeaseParts } from './lease-parts.js';
import { leasable, type LeaseConfig } from './lease-options.js';
import { blockDenied, blockGranted, localDenial } from './quota-leases-saturation.js';
export type { LeaseParts } from './lease-parts.js';

/** A request's charge waiting on its key's blocks, and the rest of the path it goes on to when they cannot serve it. */
interface LeasedRequest {
  readonly entry: LeaseEntry;
  readonly charge: Charge;
  readonly next: ChargeNext;
}

/** Asked for in one store call: `units` at `sentAt` (local clock), when {@link QuotaLeases} had heard `missed` notices that resets may have been missed. */
interface BlockAsk {
  readonly units: number;
  readonly sentAt: number;
  readonly missed: number;
}

/**
 * The quota leases of one limiter (option `lease`): per storage key, blocks charged in the store and
 * spent locally, one asked for at a time per key. A block tops the key's holding up to `units` (the
 * first is `units`, each later one about what was spent since): what the key holds unspent, its block
 * in flight included, is never more than `units`, so a holder that dies (SIGKILL) takes at most
 * `units` from the shared quota. The next block is asked for ahead, while twice what the key's
 * requests asked for during the last block's round trip is still left, so that they do not wait for
 * it; a busy key (a quarter of `units` or more asked in a round trip: its requests would wait for a
 * block of less than half anyway) asks once a request finds too little, for a block of nearly
 * `units`. A stage of the limiter's charge path: a request costing more than `units`, a reservation,
 * an idempotent charge, or one arriving when no block can be had goes on (`next`), charged alone; one whose
 * block the store failed gets the failure policy's decision for its own cost.
 *
 * At saturation, when the limiter denies locally (its deny cache is on: {@link LeaseParts.deniesLocally}),
 * a key whose block the store denied, or granted leaving less than a block, is not charged per
 * request once its blocks run out: its requests are denied here (reason `'deny-cache'`, `remaining` 0)
 * until the store would have the next block, and the next request then asks for it: one ask per
 * holder per block the store has to give (see quota-leases-saturation.ts). A block ends at the
 * ttl or sooner where its algorithm says (`Algorithm.leaseHoldMs`), counted on the local clock from
 * when it was asked for; unused units are given back at the ttl (an unref'd timer), at {@link close}
 * and once a request's own charge is denied (the shared quota is gone).
 */
export class QuotaLeases {
  private readonly book: LeaseBook;
  private closed = false;
  /** Give-backs started after {@link close} began (a block granted meanwhile): close waits for them. */
  private readonly closingBacks: Promise<void>[] = [];
  /** What the store calls on a reset anywhere; held here because the store holds it weakly. Subscribed at the first block asked for. */
  private resetListener: ((storageKey: string | undefined, hearing?: boolean) => void) | undefined;
  /** False while the store says it cannot hear resets: no block denial is repeated locally. */
  private hearing = true;
  /** How many times the store said resets may have been missed: a denial asked for before the latest is not repeated locally. */
  private missed = 0;

  constructor(
    private readonly config: LeaseConfig,
    private readonly host: LeaseParts,
  ) {
    this.book = new LeaseBook(config, host);
  }

  /** The answer to `charge`: units from a block (`took: 'leased'`), or `next`'s (charged in the store). */
  readonly stage = (charge: Charge, next: ChargeNext): MaybePromise<ChargeAnswer> => {
    const { key: storeKey, cost, algorithm } = charge;
    if (this.closed || cost > this.config.units || charge.maxDelayMs !== undefined || charge.idempotency !== undefined)
      return next(charge);
    // The entry's own algorithm object (every request of a limiter with one) is leasable and its configuration's.
    let entry = this.book.get(storeKey);
    if (entry?.algorithm !== algorithm)
      entry = leasable(algorithm, this.config.units) ? this.book.entryOf(storeKey, algorithm) : undefined;
    if (entry === undefined) return next(charge);
    const now = this.host.clock();
    entry.demand += cost;
    this.book.expire(entry, storeKey, now);
    const spent = this.spend(entry, storeKey, cost, now);
    if (spent !== undefined) return spent;
    const request: LeasedRequest = { entry, charge, next };
    if (entry.fetching !== undefined) return entry.fetching.then((d) => this.afterBlock(request, d, false));
    if (now < entry.noBlockUntil) return this.withoutBlock(request, now);
    const answer = this.fetch(entry, storeKey, now, cost);
    return answer instanceof Promise
      ? answer.then((d) => this.afterBlock(request, d, false))
      : this.afterBlock(request, answer, false);
  };

  /**
   * Takes back `units` of `storeKey` under `algorithm` admitted at `decision.at` into a live block of
   * that configuration charged then (one charged alone in that instant is the same charge to the
   * store), or with `units` below 0 (a settle above the estimate) spends them from it, as many as it
   * has left. Returns what is left for the store: 0 when the block took it all, `units` when no block
   * took any, else (a settle above what the block has left) the units past it, below 0: the block's
   * units were counted by the store when it was taken, so spending them first admits no more than the
   * limit. Found by time (a weak map per decision cost more than the rest).
   */
  refund(storeKey: string, units: number, algorithm: Algorithm, decision: Decision): number {
    const entry = this.book.get(storeKey);
    if (
      entry === undefined ||
      this.closed ||
      units > this.config.units ||
      entry.configuration !== configurationOf(algorithm)
    )
      return units;
    const now = this.host.clock();
    // A unit given back never lifts the holding above `units` (the bound of what a dead holder loses): the store takes it then.
    if (units > 0 && held(entry) + entry.asking + units > this.config.units) return units;
    for (const block of entry.blocks) {
      if (block.at !== decision.at || block.until <= now) continue;
      if (units > 0) {
        block.left += units;
        return 0;
      }
      const spent = Math.min(block.left, -units);
      block.left -= spent;
      return units + spent;
    }
    return units;
  }

  /** Forgets the blocks of `storeKey` (undefined: every key's) without giving them back (see {@link LeaseBook.forget}). */
  forget(storeKey: string | undefined): void {
    this.book.forget(storeKey);
  }

  /** Gives back every unit held, and the blocks still in flight once they come, and stops leasing (later charges go to the store). */
  async close(): Promise<void> {
    this.closed = true;
    const backs: MaybePromise<unknown>[] = [];
    for (const [storeKey, entry] of this.book.all()) {
      for (const block of entry.blocks) backs.push(this.book.giveBack(entry, storeKey, block));
      if (entry.fetching !== undefined) backs.push(entry.fetching);
      this.book.remove(entry, storeKey, 'dropped');
    }
    await Promise.all(backs);
    await Promise.all(this.closingBacks);
  }

  /** `cost` units from the entry's blocks, the first to end first, with the decision the observers hear; undefined when they hold less. */
  private spend(entry: LeaseEntry, storeKey: string, cost: number, now: number): ChargeAnswer | undefined {
    const blocks = entry.blocks;
    let left = held(entry);
    if (left < cost) return undefined;
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
    left -= cost;
    const decision = makeDecision({
      allowed: true,
      limit: entry.limit,
      remaining: Math.floor(entry.remaining + left),
      resetMs: Math.max(0, Math.ceil(entry.resetAt - now)),
      retryAfterMs: 0,
      delayMs: 0,
      policy: entry.policy,
      at: from.at,
    });
    // Less left than the requests ask for in a round trip (twice that): the next block is asked for now, so that they do not wait for it at the boundary.
    if (left < entry.askAheadBelow && entry.fetching === undefined && now >= entry.noBlockUntil)
      void this.fetch(entry, storeKey, now, cost);
    return { decision, took: 'leased' };
  }

  /**
   * A request after the block asked for came (`d`, the store's answer; undefined: none): from a live
   * block; behind the next one, once (`waited`), when the store granted this one but the requests
   * before took it all, or denied it with units left worth a block of their own (a request waits two
   * round trips at most); the policy's answer to a failure; denied locally; or charged alone.
   */
  private afterBlock(request: LeasedRequest, d: ChargeAnswer | undefined, waited: boolean): MaybePromise<ChargeAnswer> {
    const { entry, charge } = request;
    const storeKey = charge.key;
    const now = this.host.clock();
    if (entry.gone === undefined) this.book.expire(entry, storeKey, now);
    const spent = entry.gone === undefined ? this.spend(entry, storeKey, charge.cost, now) : undefined;
    if (spent !== undefined) return spent;
    const decision = d?.decision;
    if (!waited && entry.gone === undefined && decision !== undefined && (granted(decision) || entry.restAsk > 0)) {
      const next =
        entry.fetching ?? (now >= entry.noBlockUntil ? this.fetch(entry, storeKey, now, charge.cost) : undefined);
      if (next instanceof Promise) return next.then((answer) => this.afterBlock(request, answer, true));
      if (next !== undefined) return this.afterBlock(request, next, true);
    }
    const reason = decision?.reason;
    if (reason === 'timeout' || reason === 'store-error') return this.host.withoutStore(charge, reason);
    return this.withoutBlock(request, now);
  }

  /** A request no block can serve: denied without the store while its key asks for no block (see quota-leases-saturation.ts), else charged alone. */
  private withoutBlock(request: LeasedRequest, now: number): MaybePromise<ChargeAnswer> {
    return (this.hearing ? localDenial(request.entry, now) : undefined) ?? this.alone(request);
  }

  /**
   * Asks the store for a block of the entry's key (asked at `sentAt` by a request of `askedBy` units)
   * that tops what it holds up to `units` (callers ask only when it holds less than a request's cost,
   * or than {@link LeaseEntry.askAheadBelow}, itself below half of `units`: never for nothing), keeps
   * it when granted, and returns the answer; never rejects.
   */
  private fetch(
    entry: LeaseEntry,
    storeKey: string,
    sentAt: number,
    askedBy: number,
  ): MaybePromise<ChargeAnswer | undefined> {
    // Subscribed before the first answer: a denial can be repeated locally only while resets are heard.
    this.followResets();
    const topUp = this.config.units - held(entry);
    const ask: BlockAsk = {
      units: entry.restAsk > 0 ? Math.min(entry.restAsk, topUp) : topUp,
      sentAt,
      missed: this.missed,
    };
    entry.restAsk = 0;
    entry.demand = askedBy;
    let answer: MaybePromise<ChargeAnswer>;
    try {
      answer = this.host.blocks({
        key: storeKey,
        algorithm: entry.algorithm,
        cost: ask.units,
        maxDelayMs: undefined,
        idempotency: undefined,
        enforced: undefined,
      });
    } catch {
      // A bad clock reading, say: no block now; the request is charged alone, which reports it.
      entry.noBlockUntil = sentAt + 1;
      return undefined;
    }
    if (!(answer instanceof Promise)) {
      // Answered at once: no request came meanwhile, and none would wait for a block asked for later.
      entry.demand = 0;
      this.received(entry, storeKey, answer, ask);
      return answer;
    }
    const fetching = answer.then(
      (d) => {
        entry.fetching = undefined;
        entry.asking = 0;
        this.received(entry, storeKey, d, ask);
        return d;
      },
      () => {
        entry.fetching = undefined;
        entry.asking = 0;
        entry.noBlockUntil = sentAt + 1;
        return undefined;
      },
    );
    entry.fetching = fetching;
    entry.asking = ask.units;
    return fetching;
  }

  /**
   * The store's answer to the block `ask`: a granted block is kept; a failure asks none for the retry
   * interval; a denial for want of quota asks none until its retry time. When the limiter denies
   * locally, a denial, and a grant that left the store short of a block, say when the next is asked
   * and what the key's requests are told until then ({@link blockDenied}, {@link blockGranted}).
   */
  private received(entry: LeaseEntry, storeKey: string, answer: ChargeAnswer, ask: BlockAsk): void {
    const { units, sentAt } = ask;
    const d = answer.decision;
    const isGranted = granted(d);
    // A block the failure policy answered is no request's: a late grant of the store goes back.
    answer.unserved?.();
    if (entry.gone !== undefined) {
      // A block of a state reset meanwhile is dropped; one of an entry closed or replaced goes back.
      if (isGranted && entry.gone === 'dropped') {
        this.backAfterClose(
          this.host.giveBack({ key: storeKey, algorithm: entry.algorithm, cost: units, chargedAt: d.at }),
          units,
        );
      }
      return;
    }
    entry.denial = undefined;
    if (!isGranted) {
      if (d.reason === 'timeout' || d.reason === 'store-error') {
        entry.noBlockUntil = sentAt + Math.max(1, this.host.retryIntervalMs);
        return;
      }
      if (!this.deniesLocally(ask)) entry.noBlockUntil = sentAt + Math.max(1, d.retryAfterMs);
      else blockDenied(entry, { decision: d, asked: units, heardAt: this.host.clock() });
      return;
    }
    const holdMs = entry.algorithm.leaseHoldMs(d.at, units);
    const returnable = this.config.ttlMs < holdMs;
    const block: Block = {
      left: units,
      until: sentAt + (returnable ? this.config.ttlMs : holdMs),
      at: d.at,
      returnable,
    };
    this.host.counted('leased', units);
    // Ended before it came (a window that closed meanwhile): never spent; one the ttl ended goes back.
    if (block.until <= this.host.clock()) return void (returnable && this.book.giveBack(entry, storeKey, block));
    // The units asked of the key while the block was on its way (the asking request's included) say
    // how early to ask for the next: while twice that is left; or, from a quarter of `units` on (a busy
    // key, whose requests would wait for a block of less than half anyway), once a request finds too
    // little, so that each block is nearly `units`.
    entry.askAheadBelow = entry.demand * 4 < this.config.units ? 2 * entry.demand : 0;
    entry.blocks.push(block);
    entry.blocks.sort((a, b) => a.until - b.until);
    entry.remaining = d.remaining;
    entry.limit = d.limit;
    entry.policy = d.policy;
    entry.resetAt = sentAt + d.resetMs;
    if (this.deniesLocally(ask))
      blockGranted(entry, { decision: d, asked: units, heardAt: this.host.clock() }, this.config.units);
    this.book.schedule(entry, storeKey);
  }

  /** Whether the answer to `ask` may be repeated locally: the limiter denies locally, resets are heard, and none may have been missed since it was asked. */
  private deniesLocally(ask: BlockAsk): boolean {
    return this.host.deniesLocally && this.hearing && ask.missed === this.missed;
  }

  /**
   * Subscribes to the store's resets, once (at the first block asked for). A key reset anywhere
   * drops its blocks and its denial. "Resets may have been missed" (a (re)subscription, also the
   * first) drops no block (it would be lost to the quota, and any block ends at its ttl) but every
   * denial, and while the store cannot hear resets none is repeated locally.
   */
  private followResets(): void {
    if (this.resetListener !== undefined || this.host.watchResets === undefined) return;
    this.resetListener = (key, hearing) => {
      this.hearing = hearing !== false;
      if (key !== undefined) return this.forget(key);
      this.missed++;
      this.book.forgetDenials();
    };
    this.host.watchResets(this.resetListener);
  }

  /** Charges the request alone (`next`); a denial of its own cost says the shared quota is gone: what the key holds goes back. */
  private alone(request: LeasedRequest): MaybePromise<ChargeAnswer> {
    const { entry, charge, next } = request;
    const answer = next(charge);
    const settle = (a: ChargeAnswer): ChargeAnswer => {
      const d = a.decision;
      if (!d.allowed && d.reason === undefined && entry.gone === undefined) {
        entry.noBlockUntil = this.host.clock() + Math.max(1, d.retryAfterMs);
        for (const block of entry.blocks) void this.book.giveBack(entry, charge.key, block);
        entry.blocks = [];
      }
      return a;
    };
    return answer instanceof Promise ? answer.then(settle) : settle(answer);
  }

  /** A give-back of a block of `units` that came after its entry was closed or replaced: {@link close} waits for it. */
  private backAfterClose(back: MaybePromise<void>, units: number): void {
    this.host.counted('leased', units);
    this.host.counted('returned', units);
    if (back instanceof Promise && this.closed) this.closingBacks.push(back);
  }
}

/** Whether `d`, the store's answer to a block, grants it. */
function granted(d: Decision): boolean {
  return d.allowed && d.reason === undefined && d.delayMs === 0;
}
