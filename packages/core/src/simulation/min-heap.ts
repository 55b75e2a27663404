/**
 * A binary min-heap: `push` and `pop` in O(log n), `peek` in O(1). `before(a, b)` is true when `a`
 * comes out first; items that are neither before the other come out in no set order (give the order
 * a tie-breaker, such as a sequence number, when it matters). The simulations' event queues: the
 * backend model's work by completion, `rl simulate`'s clients' attempts by time.
 */
export class MinHeap<T> {
  private readonly items: T[] = [];

  constructor(private readonly before: (a: T, b: T) => boolean) {}

  /** How many items it holds. */
  get size(): number {
    return this.items.length;
  }

  /** The first item, left in; undefined when empty. */
  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T): void {
    const h = this.items;
    h.push(item);
    for (let i = h.length - 1; i > 0;) {
      const parent = (i - 1) >> 1;
      if (!this.before(h[i]!, h[parent]!)) break;
      [h[i], h[parent]] = [h[parent]!, h[i]!];
      i = parent;
    }
  }

  /** Takes the first item out; undefined when empty. */
  pop(): T | undefined {
    const h = this.items;
    const top = h[0];
    const last = h.pop();
    if (h.length === 0 || last === undefined) return top;
    h[0] = last;
    for (let i = 0; ;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let least = i;
      if (l < h.length && this.before(h[l]!, h[least]!)) least = l;
      if (r < h.length && this.before(h[r]!, h[least]!)) least = r;
      if (least === i) break;
      [h[i], h[least]] = [h[least]!, h[i]!];
      i = least;
    }
    return top;
  }
}
