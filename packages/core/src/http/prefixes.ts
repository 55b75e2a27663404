/**
 * Hands out default storage namespaces: the first middleware with limits named `base` gets `base`,
 * later ones `base#2`, `base#3`, … Numbers follow creation order, so an app that creates its
 * middlewares in the same order gets the same prefixes on every restart and every instance.
 */
export class PrefixRegistry {
  /** Middlewares created so far per base namespace. */
  private readonly counts = new Map<string, number>();

  /** The next namespace for `base`. */
  take(base: string): string {
    const count = (this.counts.get(base) ?? 0) + 1;
    this.counts.set(base, count);
    return count === 1 ? base : `${base}#${count}`;
  }

  /** Returns the namespace just taken for `base` (its middleware failed to build): the next one gets it again. */
  giveBack(base: string): void {
    const count = this.counts.get(base);
    if (count !== undefined) this.counts.set(base, count - 1);
  }
}

/**
 * The registry of this process: every middleware built without an explicit prefix takes its
 * namespace here (the one piece of module-level state of the HTTP layer).
 */
export const processPrefixes = new PrefixRegistry();
