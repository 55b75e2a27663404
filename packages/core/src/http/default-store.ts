import type { Store } from '../store/interface.js';

/**
 * The default store of one owner (a middleware, Fastify's plugin, Nest's module): the store rl makes
 * when the options give none, made at its first use, at most once, and closed with its owner. A store
 * the user gives is never held here, so rl never closes it (the user opened it, the user closes it).
 */
export class DefaultStore {
  private made: Store | undefined;

  /** `create`: makes the default store (an adapter's memory store), called at most once. */
  constructor(private readonly create: () => Store) {}

  /**
   * `given` when the options give a store (any value but `undefined`: it is checked where it is
   * used), else the default store, made at the first such call and the same one after.
   */
  storeFor(given: Store | undefined): Store {
    if (given !== undefined) return given;
    this.made ??= this.create();
    return this.made;
  }

  /** The default store, once made; undefined while every caller gave its own. */
  get created(): Store | undefined {
    return this.made;
  }

  /** Closes the default store when it was made (an owner that never needed it closes nothing). */
  async close(): Promise<void> {
    await this.made?.close?.();
  }
}
