/**
 * The listeners of an in-process store's `watchResets` (see `Store.watchResets`), for a store whose
 * every limiter shares its process: told synchronously, inside the reset, ban, unban or override call
 * that changed the key, so that by the time that call returns every deny cache and quota lease in
 * front of the store has forgotten the key. Held weakly, as a limiter's core keeps its own listener:
 * a collected limiter stops hearing, and its entry is dropped at the next notice or registration.
 */
export class ResetListeners {
  private readonly listeners = new Set<WeakRef<(storageKey: string | undefined) => void>>();

  /** Adds `listener` (held weakly); the entries of collected listeners are dropped first, so the set stays as large as the live ones. */
  listen(listener: (storageKey: string | undefined) => void): void {
    for (const ref of this.listeners) if (ref.deref() === undefined) this.listeners.delete(ref);
    this.listeners.add(new WeakRef(listener));
  }

  /**
   * Tells every live listener that `storageKey` (the key as the limiter passed it to the store) was
   * reset, banned, unbanned or overridden. Every listener is told even when one throws; the first
   * error is thrown after that (a listener of the caller's own that fails, not the store).
   */
  tell(storageKey: string): void {
    const errors: unknown[] = [];
    for (const ref of this.listeners) {
      const listener = ref.deref();
      if (listener === undefined) {
        this.listeners.delete(ref);
        continue;
      }
      try {
        listener(storageKey);
      } catch (error) {
        errors.push(error);
      }
    }
    if (errors.length > 0) throw errors[0];
  }

  /** Forgets every listener (the store closed). */
  clear(): void {
    this.listeners.clear();
  }
}
