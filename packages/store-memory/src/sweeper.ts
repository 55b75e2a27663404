import type { BlockTable, OverrideTable, TimerHandle, Timers } from '@rl/core/store';
import type { KeyCursor } from './key-index.js';
import type { AnyTable, Table } from './tables.js';

/** Entries examined per sweep step; a sweep of many keys is spread over several event-loop turns. */
const SWEEP_BATCH = 20_000;

/** What a {@link Sweeper} sweeps: the store's tables and lockouts, the latest time it decided at, and where removals are counted. */
export interface Sweepable {
  tables(): Iterable<AnyTable>;
  blocks(): BlockTable;
  overrides(): OverrideTable;
  /** The latest `now` the store decided at (-Infinity before the first decision). */
  lastNow(): number;
  /** The latest `now` a caller passed rather than the store's clock (-Infinity while none has). */
  callerNow(): number;
  /** `count` keys were removed. */
  removed(count: number): void;
}

/**
 * The memory store's sweep of state that has fully recovered: one timer (on `timers`, unref'd) that
 * runs a bounded step every `intervalMs` (0: never), a step that ran out of budget going on at once;
 * each step continues where the previous one stopped. Time is the latest time the store decided at,
 * projected forward on the timers' clock (so a store's fake clock and fake timers work together), but
 * never past the latest time a limiter's own clock gave (see {@link Sweeper.projectedNow}).
 */
export class Sweeper {
  /** The pending step, or undefined when sweeping is off or stopped. */
  private timer: TimerHandle | undefined;
  private cursor: { table: AnyTable; keys: KeyCursor<unknown> } | undefined;
  private base = -Infinity;
  private baseAt = 0;
  private stopped = false;

  constructor(
    private readonly store: Sweepable,
    private readonly timers: Timers,
    private readonly intervalMs: number,
  ) {}

  /**
   * Arms the timer, at the store's first decision: not when the store is created, because Cloudflare
   * Workers refuse a timer set in a module's global scope, where an app (and its default memory store)
   * is made. Until then there is nothing to sweep.
   */
  start(): void {
    if (this.intervalMs > 0 && this.timer === undefined && !this.stopped) this.schedule(this.intervalMs);
  }

  /** Stops the timer for good. */
  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
    this.timer = undefined;
  }

  /**
   * The latest time the store decided at, moved on by the time passed on the timers since the sweeper
   * first saw it; never past the latest time a caller passed: a limiter's clock may be frozen or
   * simulated, and a state it wrote is live until that clock, not the timers, says it has recovered.
   */
  projectedNow(): number {
    const wall = this.timers.now();
    const last = this.store.lastNow();
    if (last !== this.base) {
      this.base = last;
      this.baseAt = wall;
    }
    const projected = this.base + (wall - this.baseAt);
    const caller = this.store.callerNow();
    return caller === -Infinity || projected < caller ? projected : caller;
  }

  /** Removes every state (and lockout, and override) that has fully recovered at `now`, at once; returns how many keys. */
  sweepAll(now: number): number {
    this.store.blocks().sweep(now);
    this.store.overrides().sweep(now);
    let removed = 0;
    for (const table of this.store.tables())
      removed += this.sweepEntries(table, cursorOf(table), now, Infinity).removed;
    return removed;
  }

  /** Arms the one timer, `ms` from now, unref'd when the handle can be (a sweep is never a reason for a process to stay alive). */
  private schedule(ms: number): void {
    const timer = this.timers.setTimeout(this.tick, ms);
    if (typeof timer === 'object' && timer !== null && typeof (timer as { unref?: unknown }).unref === 'function')
      (timer as { unref(): void }).unref();
    this.timer = timer;
  }

  private readonly tick = (): void => {
    this.timer = undefined;
    if (this.stopped) return;
    this.schedule(this.step() ? 1 : this.intervalMs);
  };

  /** One bounded step: continues where the previous step stopped. Returns true when its budget ran out (more to sweep). */
  private step(): boolean {
    if (this.store.lastNow() === -Infinity) return false;
    const now = this.projectedNow();
    const blocks = this.store.blocks();
    if (blocks.size > 0) blocks.sweep(now);
    const overrides = this.store.overrides();
    if (overrides.size > 0) overrides.sweep(now);
    let budget = SWEEP_BATCH;
    const tables = [...this.store.tables()];
    for (let i = 0; i < tables.length && budget > 0; i++) {
      if (this.cursor === undefined) this.cursor = { table: tables[0]!, keys: cursorOf(tables[0]!) };
      const { table, keys } = this.cursor;
      const result = this.sweepEntries(table, keys, now, budget);
      budget -= result.seen;
      if (result.done) {
        const next = tables[(tables.indexOf(table) + 1) % tables.length]!;
        this.cursor = { table: next, keys: cursorOf(next) };
      }
    }
    return budget === 0;
  }

  private sweepEntries(
    table: Table<unknown>,
    keys: KeyCursor<unknown>,
    now: number,
    budget: number,
  ): { seen: number; removed: number; done: boolean } {
    let seen = 0;
    let removed = 0;
    while (seen < budget && keys.next()) {
      seen++;
      const value = keys.value;
      if (table.expired(value, now)) {
        table.deleteAt(keys);
        removed += table.weight(value);
      }
    }
    this.store.removed(removed);
    return { seen, removed, done: seen < budget };
  }
}

/** A cursor at the start of `table`'s keys, typed as any table's. */
function cursorOf(table: AnyTable): KeyCursor<unknown> {
  return (table as Table<unknown>).index.cursor();
}
