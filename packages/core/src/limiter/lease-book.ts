import type { Algorithm } from '../algorithm.js';
import type { MaybePromise } from '../store/interface.js';
import { unrefTimer } from '../timers.js';
import { configurationOf } from './deny-cache.js';
import type { Block, LeaseEntry, LeaseParts } from './lease-parts.js';
import type { LeaseConfig } from './lease-options.js';

/** How many of the oldest keys are looked at for one that holds nothing (no block, none asked for), when `maxKeys` hold blocks. */
const EVICTION_SCAN = 16;

/**
 * The entries of one limiter's quota leases (see `QuotaLeases`), one per storage key under one
 * configuration, at most `maxKeys` (a new key evicts one of the oldest that holds nothing), and what
 * ends their blocks: the ttl (one unref'd timer per entry, which also forgets a key that holds
 * nothing), a give-back, a changed plan, a reset.
 */
export class LeaseBook {
  private readonly entries = new Map<string, LeaseEntry>();

  constructor(
    private readonly config: LeaseConfig,
    private readonly host: LeaseParts,
  ) {}

  /** The entry of `storeKey`, whatever its configuration. */
  get(storeKey: string): LeaseEntry | undefined {
    return this.entries.get(storeKey);
  }

  /** Every entry with its key, as a list (the caller may remove them). */
  all(): [string, LeaseEntry][] {
    return [...this.entries];
  }

  /**
   * Forgets the blocks of `storeKey` (undefined: every key's) without giving them back: its state was
   * reset (here, or anywhere the store tells of); a block of the old state in flight is dropped when it comes.
   */
  forget(storeKey: string | undefined): void {
    const keys = storeKey === undefined ? [...this.entries.keys()] : [storeKey];
    for (const key of keys) {
      const entry = this.entries.get(key);
      if (entry !== undefined) this.remove(entry, key, 'forgotten');
    }
  }

  /**
   * Forgets every key's block denial (resets may have been missed: a denial may be of a state since
   * reset): the next request asks for a block again. The blocks are kept (they end at their ttl).
   */
  forgetDenials(): void {
    for (const entry of this.entries.values()) {
      if (entry.denial === undefined) continue;
      entry.denial = undefined;
      entry.noBlockUntil = -Infinity;
    }
  }

  /** The entry of `storeKey` for `algorithm`'s configuration (a changed plan gives the old one's blocks back); undefined: charge alone (the old plan's block in flight, `maxKeys` full). */
  entryOf(storeKey: string, algorithm: Algorithm): LeaseEntry | undefined {
    const configuration = configurationOf(algorithm);
    const entry = this.entries.get(storeKey);
    if (entry !== undefined && entry.configuration === configuration) return entry;
    if (entry !== undefined) {
      if (entry.fetching !== undefined) return undefined;
      for (const block of entry.blocks) void this.giveBack(entry, storeKey, block);
      this.remove(entry, storeKey, 'dropped');
    } else if (this.entries.size >= this.config.maxKeys && !this.evictIdle()) return undefined;
    const fresh: LeaseEntry = {
      algorithm,
      configuration,
      blocks: [],
      remaining: 0,
      limit: algorithm.limit,
      policy: algorithm.policy,
      resetAt: 0,
      fetching: undefined,
      asking: 0,
      demand: 0,
      askAheadBelow: 0,
      noBlockUntil: -Infinity,
      denial: undefined,
      restAsk: 0,
      pacedMs: 0,
      timer: undefined,
      gone: undefined,
    };
    this.entries.set(storeKey, fresh);
    return fresh;
  }

  /** Forgets one of the oldest keys that holds nothing ({@link EVICTION_SCAN}); false when each still does. */
  private evictIdle(): boolean {
    let looked = 0;
    for (const [storeKey, entry] of this.entries) {
      if (entry.blocks.length === 0 && entry.fetching === undefined) {
        this.remove(entry, storeKey, 'dropped');
        return true;
      }
      if (++looked >= EVICTION_SCAN) break;
    }
    return false;
  }

  /** Drops the blocks that have ended by `now`, giving back the unused units of those the ttl ended. */
  expire(entry: LeaseEntry, storeKey: string, now: number): void {
    const blocks = entry.blocks;
    if (blocks.length === 0 || blocks[0]!.until > now) return;
    for (const block of blocks) if (block.until <= now && block.returnable) void this.giveBack(entry, storeKey, block);
    entry.blocks = blocks.filter((block) => block.until > now);
  }

  /** Gives a block's unused units back (none left: nothing to do). */
  giveBack(entry: LeaseEntry, storeKey: string, block: Block): MaybePromise<void> {
    const units = block.left;
    block.left = 0;
    if (units <= 0) return undefined;
    this.host.counted('returned', units);
    return this.host.giveBack({ key: storeKey, algorithm: entry.algorithm, cost: units, chargedAt: block.at });
  }

  /** Takes the entry out of the book (`gone` says why), its timer cleared and its blocks dropped (give them back first). */
  remove(entry: LeaseEntry, storeKey: string, gone: 'forgotten' | 'dropped'): void {
    if (entry.timer !== undefined) this.host.timers.clearTimeout(entry.timer);
    entry.timer = undefined;
    entry.blocks = [];
    entry.gone = gone;
    if (this.entries.get(storeKey) === entry) this.entries.delete(storeKey);
  }

  /** Arms the entry's one timer for its first block's end: a live holder gives back at the ttl, and forgets a key that holds nothing (unless at saturation: see `LeaseEntry.pacedMs`). */
  schedule(entry: LeaseEntry, storeKey: string): void {
    if (entry.timer !== undefined || entry.blocks.length === 0) return;
    const wait = Math.max(1, Math.ceil(entry.blocks[0]!.until - this.host.clock()));
    entry.timer = unrefTimer(
      this.host.timers.setTimeout(() => {
        entry.timer = undefined;
        const now = this.host.clock();
        this.expire(entry, storeKey, now);
        if (entry.blocks.length > 0) this.schedule(entry, storeKey);
        // A key at saturation keeps its entry: when to ask for the next block is its to say (a `maxKeys` eviction may still take it).
        else if (entry.fetching === undefined && !saturated(entry, now) && this.entries.get(storeKey) === entry)
          this.remove(entry, storeKey, 'dropped');
      }, wait),
    );
  }
}

/** Whether the entry says when its key's next block is there (see quota-leases-saturation.ts): a denial repeated until then, or the pace of a key at saturation. */
function saturated(entry: LeaseEntry, now: number): boolean {
  return entry.pacedMs > 0 || (entry.denial !== undefined && now < entry.noBlockUntil);
}

/** The units the entry's live blocks hold unspent. */
export function held(entry: LeaseEntry): number {
  let units = 0;
  for (const block of entry.blocks) units += block.left;
  return units;
}
