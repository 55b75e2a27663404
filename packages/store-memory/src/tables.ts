import type {
  ConcurrencyAlgorithm,
  Decision,
  LeaseState,
  LogAlgorithm,
  LogState,
  NumericAlgorithm,
  SettleRequest,
  StepRequest,
} from '@rl/core/store';
import { KeyIndex, type KeyCursor } from './key-index.js';

/**
 * The store's eviction before an insert (given to a table at construction): makes room for one more
 * key when the store is full, from `table`, else from the fullest other table, at `now` (ms).
 */
export type MakeRoom = (table: AnyTable, now: number) => void;

/**
 * The keys of one state layout, with what eviction and sweeping need. `V` is what the index maps a
 * key to (a slot, or an entry object). The index is by scope and local part (see {@link KeyIndex}).
 *
 * Eviction is CLOCK, an approximation of LRU: a hand goes round the keys in insertion order; a key
 * used since the hand last passed it gets a second chance (its bit is cleared and the hand moves on),
 * any other key, or one whose state has fully recovered, is evicted. The hand is one iterator kept
 * from one eviction to the next, so each eviction costs a constant amortised number of steps
 * however many evictions came before: a new iterator per eviction would walk again, every time, over
 * the deleted entries that earlier evictions left at the start of the Map's table.
 */
export abstract class Table<V> {
  readonly index = new KeyIndex<V>();
  private hand: KeyCursor<V> | undefined;

  /**
   * True when the key's state needs nothing any more at `now`: its deadline, the latest time any
   * configuration that wrote it said its state is the same as no state (kept with the state, so
   * expiry depends on the configurations that wrote a key, never on how many algorithm objects a
   * table has seen: a quota built per request is as cheap as one reused).
   */
  abstract expired(value: V, now: number): boolean;
  /** Frees what a forgotten key's value holds (a slot); its key is already out of the index. */
  protected abstract release(value: V): void;
  /** Whether the key was used since the hand last passed it; clears that mark. */
  protected abstract takeSecondChance(value: V): boolean;

  /** How many of the store's `maxKeys` the entry counts for (1; an entry of remembered ids, one per id). */
  weight(_value: V): number {
    return 1;
  }

  /** Forgets a key (addressed as in `KeyIndex.get`); returns its value (undefined when it was not held). */
  delete(scope: string | undefined, local: string): V | undefined {
    const value = this.index.take(scope, local);
    if (value !== undefined) this.release(value);
    return value;
  }

  /** Forgets the key `cursor` (a cursor of this table's index) is at. */
  deleteAt(cursor: KeyCursor<V>): void {
    cursor.delete();
    this.release(cursor.value);
  }

  /** Evicts one key (see the class comment): the weight it counted for; 0 when the table is empty. */
  evictOne(now: number): number {
    // Two passes at most: the first can only clear marks, so the second finds a key to evict.
    for (let steps = 2 * this.index.size + 1; steps > 0; steps--) {
      let hand = this.hand;
      if (hand === undefined || !hand.next()) {
        this.hand = hand = this.index.cursor();
        if (!hand.next()) return 0;
      }
      const value = hand.value;
      if (this.takeSecondChance(value) && !this.expired(value, now)) continue;
      this.deleteAt(hand);
      return this.weight(value);
    }
    return 0;
  }
}

/**
 * Fixed-size states of one layout, packed in one Float64Array: a key costs a Map entry holding a
 * small integer slot, `stride` doubles (the state's, then its deadline), and one byte for the CLOCK mark.
 */
export class NumericTable extends Table<number> {
  /**
   * Per slot, the state (from `slot * stride`), then its key's deadline (see {@link Table.expired}):
   * raised by every write, never lowered; beside the state, so that a decision reads one cache line.
   */
  data: Float64Array;
  /** Doubles per slot: the state's and the deadline. */
  readonly stride: number;
  /** 1 when the slot's key was used since the eviction hand last passed it. */
  touched: Uint8Array;
  private readonly free: number[] = [];
  private next = 0;

  constructor(
    stateSize: number,
    private readonly makeRoom: MakeRoom,
  ) {
    super();
    this.stride = stateSize + 1;
    this.data = new Float64Array(1024 * this.stride);
    this.touched = new Uint8Array(1024);
  }

  /** A slot for a new key (addressed as in `KeyIndex.get`). */
  allocate(scope: string | undefined, local: string): number {
    let slot = this.free.pop();
    if (slot === undefined) {
      slot = this.next++;
      if (slot >= this.touched.length) this.grow();
    }
    this.index.set(scope, local, slot);
    this.touched[slot] = 0;
    this.data[slot * this.stride + this.stride - 1] = -Infinity;
    return slot;
  }

  /** A write of `slot` by a configuration whose state there is the same as no state at `deadline`. */
  wrote(slot: number, deadline: number): void {
    const at = slot * this.stride + this.stride - 1;
    if (deadline > this.data[at]!) this.data[at] = deadline;
  }

  /**
   * Settles the charge of `local`, a storage key alone, under `algorithm` (see `NumericAlgorithm.settle`): a state is made for a
   * charge above the estimate when none is held (the store's room made first). Returns the change in
   * the number of keys.
   */
  settle(local: string, algorithm: NumericAlgorithm, request: SettleRequest): number {
    let slot = this.index.get(undefined, local);
    const fresh = slot === undefined;
    if (slot === undefined) {
      if (request.actual <= request.cost) return 0;
      this.makeRoom(this, request.now);
      slot = this.allocate(undefined, local);
    }
    algorithm.settle(this.data, slot * this.stride, fresh, request);
    this.wrote(slot, algorithm.expiresAt(this.data, slot * this.stride));
    return fresh ? 1 : 0;
  }

  protected release(slot: number): void {
    this.free.push(slot);
  }

  expired(slot: number, now: number): boolean {
    return this.data[slot * this.stride + this.stride - 1]! <= now;
  }

  protected takeSecondChance(slot: number): boolean {
    if (this.touched[slot] !== 1) return false;
    this.touched[slot] = 0;
    return true;
  }

  private grow(): void {
    const size = this.touched.length * 2;
    const data = new Float64Array(size * this.stride);
    data.set(this.data);
    this.data = data;
    const touched = new Uint8Array(size);
    touched.set(this.touched);
    this.touched = touched;
  }
}

/**
 * The numeric tables of a store, one per state layout (`stateTag`), and the last one used: most
 * stores serve one limiter, so a decision by the same algorithm object as the last skips the lookup.
 */
export class NumericTables {
  private readonly byTag = new Map<string, NumericTable>();
  private lastAlgorithm: NumericAlgorithm | undefined;
  private lastTable: NumericTable | undefined;

  /** `makeRoom`: the store's eviction, given to each table made. */
  constructor(private readonly makeRoom: MakeRoom) {}

  /** The table of `algorithm`'s layout, made when first asked for. */
  of(algorithm: NumericAlgorithm): NumericTable {
    return algorithm === this.lastAlgorithm ? this.lastTable! : this.ofAnother(algorithm);
  }

  /** {@link of} for another algorithm than the last (off the hot path, so that {@link of} inlines small). */
  private ofAnother(algorithm: NumericAlgorithm): NumericTable {
    let table = this.byTag.get(algorithm.stateTag);
    if (table === undefined) {
      table = new NumericTable(algorithm.stateSize, this.makeRoom);
      this.byTag.set(algorithm.stateTag, table);
    }
    this.lastAlgorithm = algorithm;
    this.lastTable = table;
    return table;
  }

  /** The table of a layout, when one was made. */
  get(stateTag: string): NumericTable | undefined {
    return this.byTag.get(stateTag);
  }

  values(): IterableIterator<NumericTable> {
    return this.byTag.values();
  }

  /** Forgets every table (the store closed). */
  clear(): void {
    this.byTag.clear();
    this.lastAlgorithm = undefined;
    this.lastTable = undefined;
  }
}

export interface ObjectEntry<S> {
  state: S;
  /** True when the key was used since the eviction hand last passed it. */
  touched: boolean;
  /** The key's deadline (see {@link Table.expired}): raised by every write, never lowered. */
  deadline: number;
}

/** Variable-size states (sliding logs, lease sets), one object per key. */
export class ObjectTable<S> extends Table<ObjectEntry<S>> {
  expired(entry: ObjectEntry<S>, now: number): boolean {
    return entry.deadline <= now;
  }

  /** An entry holds nothing beside itself. */
  protected release(_entry: ObjectEntry<S>): void {}

  protected takeSecondChance(entry: ObjectEntry<S>): boolean {
    if (!entry.touched) return false;
    entry.touched = false;
    return true;
  }
}

/** The records of sliding logs, a log per key. */
export class LogTable extends ObjectTable<LogState> {
  /** `admit`: the store's eviction, called before a new key is added, which also counts the key in the store. */
  constructor(private readonly admit: MakeRoom) {
    super();
  }

  /**
   * One step of `algorithm` for the key held as `local` in `scope` (see `KeyIndex.get`; see
   * `LogAlgorithm.step`): its decision; a new key is admitted (`admit`) before it is added. The
   * answer is the decision alone, not a record with the count: a record returned across a call the
   * compiler does not inline is allocated.
   */
  decide(scope: string | undefined, local: string, algorithm: LogAlgorithm, request: StepRequest): Decision {
    const entry = this.index.get(scope, local);
    if (entry !== undefined) {
      entry.touched = true;
      const decision = algorithm.step(entry.state, request).decision;
      if (request.commit) {
        const deadline = algorithm.expiresAt(entry.state);
        if (deadline > entry.deadline) entry.deadline = deadline;
      }
      return decision;
    }
    const { state, decision } = algorithm.step(undefined, request);
    if (!request.commit || state.times.length === 0) return decision;
    this.admit(this, request.now);
    this.index.set(scope, local, { state, touched: false, deadline: algorithm.expiresAt(state) });
    return decision;
  }
}

/** The permits of concurrency limits, a lease set per key. */
export class LeaseTable extends ObjectTable<LeaseState> {
  /** `makeRoom`: the store's eviction, called before a new key is added. */
  constructor(private readonly makeRoom: MakeRoom) {
    super();
  }

  /**
   * Takes permit `leaseId` of `key` (a storage key alone) at `now` when one is free, the store's room made before a new key
   * is added. Returns the decision and the change in the number of keys (1 for a new key).
   */
  take(
    key: string,
    algorithm: ConcurrencyAlgorithm,
    leaseId: string,
    now: number,
  ): { decision: Decision; added: number } {
    const entry = this.index.get(undefined, key);
    if (entry !== undefined) entry.touched = true;
    const { state, decision } = algorithm.acquire(entry?.state, now, leaseId, true);
    if (!decision.allowed) return { decision, added: 0 };
    // A lease's expiry is its own: the newest one is the key's deadline.
    const deadline = now + algorithm.leaseMs;
    if (entry !== undefined) {
      if (deadline > entry.deadline) entry.deadline = deadline;
    } else if (state.size > 0) {
      this.makeRoom(this, now);
      this.index.set(undefined, key, { state, touched: false, deadline });
      return { decision, added: 1 };
    }
    return { decision, added: 0 };
  }

  /** Returns permit `leaseId` of `key` (an unknown one: nothing); the change in the number of keys (-1 when its last permit went). */
  give(key: string, leaseId: string): number {
    const entry = this.index.get(undefined, key);
    if (entry === undefined) return 0;
    entry.state.delete(leaseId);
    if (entry.state.size > 0) return 0;
    this.delete(undefined, key);
    return -1;
  }
}
export type AnyTable = NumericTable | LogTable | LeaseTable | ObjectTable<unknown>;
