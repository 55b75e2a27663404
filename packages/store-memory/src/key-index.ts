/**
 * The most scopes one index learns. A key given with the parts of a scope past them is held as if
 * given alone (see {@link KeyIndex}): the same state, found by its storage key. Bounds the work of
 * learning a scope (each moves entries at most once) and the lists a lookup may read.
 */
export const MAX_SCOPES = 64;

/** A scope the index knows that begins a longer one, and what follows it there (`longer.prefix === prefix + rest`). */
interface Longer<V> {
  readonly scope: Scope<V>;
  readonly rest: string;
}

/** One scope's keys, by their local part. */
export class Scope<V> {
  readonly keys = new Map<string, V>();
  /** The known scopes that begin with this one and are longer, longest first. */
  readonly longer: Longer<V>[] = [];
  constructor(readonly prefix: string) {}
}

/** Where a key is held: its scope, and its part after the scope's prefix. */
interface Place<V> {
  readonly scope: Scope<V>;
  readonly local: string;
}

/**
 * The keys of one table, each mapped to a `V`, indexed by scope and local part.
 *
 * Why: a limiter charges `prefix:` + the caller's key. Looked up as one string, that key is a new
 * string on every call, which V8's `Map` must flatten, hash, and compare by content with the stored
 * key (a cache miss more at scale); looked up by the caller's own string in the scope's own map, it is
 * most often the very string object the map was filled with (a pointer comparison, its hash cached).
 *
 * The rule, so that two spellings of one storage key are one key (as on Redis, which sees only the
 * storage key): a key is held under the longest scope this index knows that begins it, with the rest
 * as its local part; the root scope `''` begins every key. A scope is learnt when a key is first given
 * with its parts (at most {@link MAX_SCOPES}; not one that begins with `\0`, the mark of a digested
 * key). When a scope is learnt, the keys held under a shorter scope that the new one begins move under
 * it, once. A key given alone (a control call, a charge built without parts) or with the parts of a
 * scope that is not learnt is resolved by the same rule from its storage key.
 *
 * The common case costs one comparison of the scope's string and one `Map.get` by the caller's
 * string: the scope of the last key given with parts is kept while it begins no longer known one (then
 * no local part needs a check). A key given alone while no scope is learnt is the root's, as directly.
 */
export class KeyIndex<V> {
  private readonly root = new Scope<V>('');
  /** Every scope, the root first, in the order learnt: the order of a {@link KeyCursor}. */
  private readonly scopes: Scope<V>[] = [this.root];
  private readonly byPrefix = new Map<string, Scope<V>>([['', this.root]]);
  /**
   * The prefix of the last scope a key was given with parts of, while no known scope is longer and
   * begins with it (else null), and that scope's keys: a key with this scope (the same string, as a
   * limiter gives it every time) is its local part in these keys. The hot path is this one comparison,
   * small enough for the compiler to inline whole.
   */
  private fastScope: string | null = null;
  private fastKeys: Map<string, V> = this.root.keys;

  /** The number of keys held. */
  get size(): number {
    let size = 0;
    for (const scope of this.scopes) size += scope.keys.size;
    return size;
  }

  /** The value of the key held as `local` in `scope` (see the class comment; `scope` undefined: `local` is the storage key alone). */
  get(scope: string | undefined, local: string): V | undefined {
    return scope === this.fastScope ? this.fastKeys.get(local) : this.getPlaced(scope, local);
  }

  set(scope: string | undefined, local: string, value: V): void {
    if (scope === this.fastScope) this.fastKeys.set(local, value);
    else this.setPlaced(scope, local, value);
  }

  /** Forgets the key (as for {@link get}); returns what it was mapped to (undefined when it was not held). */
  take(scope: string | undefined, local: string): V | undefined {
    const place = this.place(scope, local);
    const value = place.scope.keys.get(place.local);
    if (value !== undefined) place.scope.keys.delete(place.local);
    return value;
  }

  /** Forgets every key (the scopes learnt are kept). */
  clear(): void {
    for (const scope of this.scopes) scope.keys.clear();
  }

  /** A cursor at the start of the index: one pass over every key, scope by scope. */
  cursor(): KeyCursor<V> {
    return new KeyCursor(this.scopes);
  }

  /** The storage keys held (as held: a long key by its digest). */
  *keys(): IterableIterator<string> {
    for (const scope of this.scopes) for (const local of scope.keys.keys()) yield scope.prefix + local;
  }

  /** {@link get} off the hot path (kept out of it: the smaller `get`, the more of its callers the compiler inlines). */
  private getPlaced(scope: string | undefined, local: string): V | undefined {
    // A storage key alone while no scope is learnt (a store whose charges come without parts): the root's.
    if (scope === undefined && this.root.longer.length === 0) return this.root.keys.get(local);
    const place = this.place(scope, local);
    return place.scope.keys.get(place.local);
  }

  /** {@link set} off the hot path. */
  private setPlaced(scope: string | undefined, local: string, value: V): void {
    if (scope === undefined && this.root.longer.length === 0) this.root.keys.set(local, value);
    else {
      const place = this.place(scope, local);
      place.scope.keys.set(place.local, value);
    }
  }

  /**
   * Where a key is held (see the class comment): from its scope when given and learnt (learnt now if
   * new), else from the root, the longest known scope that begins it. A given scope that begins no
   * longer one becomes the fast scope.
   */
  private place(prefix: string | undefined, local: string): Place<V> {
    const given = prefix === undefined ? undefined : (this.byPrefix.get(prefix) ?? this.learn(prefix));
    const base = given ?? this.root;
    const rest = given === undefined && prefix !== undefined ? prefix + local : local;
    if (given !== undefined && base.longer.length === 0) {
      this.fastScope = prefix!;
      this.fastKeys = base.keys;
    }
    for (const longer of base.longer) {
      if (rest.startsWith(longer.rest)) return { scope: longer.scope, local: rest.slice(longer.rest.length) };
    }
    return { scope: base, local: rest };
  }

  /** Learns `prefix` (see the class comment): its scope, or undefined when it is not to be learnt. */
  private learn(prefix: string): Scope<V> | undefined {
    if (prefix.charCodeAt(0) === 0 || this.scopes.length > MAX_SCOPES) return undefined;
    const learnt = new Scope<V>(prefix);
    for (const other of this.scopes) {
      if (other.prefix.length > prefix.length && other.prefix.startsWith(prefix)) {
        learnt.longer.push({ scope: other, rest: other.prefix.slice(prefix.length) });
      } else if (prefix.startsWith(other.prefix)) {
        const rest = prefix.slice(other.prefix.length);
        other.longer.push({ scope: learnt, rest });
        other.longer.sort(longestFirst);
        // Held under `other` means no longer known scope begins them: the new one takes those it begins.
        for (const [local, value] of other.keys) {
          if (!local.startsWith(rest)) continue;
          other.keys.delete(local);
          learnt.keys.set(local.slice(rest.length), value);
        }
      }
    }
    learnt.longer.sort(longestFirst);
    // The fast scope may now begin a longer one: the next lookup places its key again.
    this.fastScope = null;
    this.scopes.push(learnt);
    this.byPrefix.set(prefix, learnt);
    return learnt;
  }
}

function longestFirst<V>(a: Longer<V>, b: Longer<V>): number {
  return b.rest.length - a.rest.length;
}

/**
 * One pass over a {@link KeyIndex}, scope by scope in the order learnt, each scope's keys in insertion
 * order (a `Map` iterator each: keys added to a scope not yet passed are met in this pass, others in
 * the next). {@link next} moves to the next key; {@link local} and {@link value} are the key's.
 */
export class KeyCursor<V> {
  local = '';
  value!: V;
  private scope: Scope<V> | undefined;
  private entries: Iterator<[string, V]> | undefined;
  private at = 0;

  constructor(private readonly scopes: readonly Scope<V>[]) {}

  /** Moves to the next key; false at the end of the pass. */
  next(): boolean {
    for (;;) {
      const step = this.entries?.next();
      if (step !== undefined && step.done !== true) {
        [this.local, this.value] = step.value;
        return true;
      }
      if (this.at >= this.scopes.length) return false;
      this.scope = this.scopes[this.at++]!;
      this.entries = this.scope.keys.entries();
    }
  }

  /** Forgets the key the cursor is at (the pass goes on). */
  delete(): void {
    this.scope?.keys.delete(this.local);
  }
}
