/**
 * Arrivals to replay, sorted by time: `times[i]` in milliseconds on the limiter's clock, `keyIndex[i]`
 * into `keys`, `costs[i]` in units. Typed arrays, so a million arrivals take about 20 MB.
 */
export interface Traffic {
  readonly times: Float64Array;
  readonly keyIndex: Uint32Array;
  readonly keys: readonly string[];
  readonly costs: Float64Array;
  /** True when every cost is 1. */
  readonly unitCosts: boolean;
}

/** Collects arrivals (in any order) and builds a {@link Traffic} sorted by time, ties in the order added. */
export class TrafficBuilder {
  private times: number[] = [];
  private keyIndex: number[] = [];
  private costs: number[] = [];
  private readonly keyIds = new Map<string, number>();
  private readonly keys: string[] = [];
  private sorted = true;

  add(timeMs: number, key: string, cost: number): void {
    let id = this.keyIds.get(key);
    if (id === undefined) {
      id = this.keys.length;
      this.keys.push(key);
      this.keyIds.set(key, id);
    }
    if (this.times.length > 0 && timeMs < this.times[this.times.length - 1]!) this.sorted = false;
    this.times.push(timeMs);
    this.keyIndex.push(id);
    this.costs.push(cost);
  }

  get size(): number {
    return this.times.length;
  }

  build(): Traffic {
    const n = this.times.length;
    let order: number[] | undefined;
    if (!this.sorted) {
      order = Array.from({ length: n }, (_, i) => i);
      // Array.prototype.sort is stable: arrivals at one time keep their order.
      order.sort((a, b) => this.times[a]! - this.times[b]!);
    }
    const times = new Float64Array(n);
    const keyIndex = new Uint32Array(n);
    const costs = new Float64Array(n);
    let unitCosts = true;
    for (let i = 0; i < n; i++) {
      const j = order === undefined ? i : order[i]!;
      times[i] = this.times[j]!;
      keyIndex[i] = this.keyIndex[j]!;
      costs[i] = this.costs[j]!;
      if (costs[i] !== 1) unitCosts = false;
    }
    this.times = [];
    this.keyIndex = [];
    this.costs = [];
    return { times, keyIndex, keys: this.keys, costs, unitCosts };
  }
}
