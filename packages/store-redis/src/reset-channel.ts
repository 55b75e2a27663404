import type { ClientAdapter } from './clients/adapter.js';

/**
 * The store's channel of resets (`<prefix>resets`): a reset publishes the storage key, and every
 * store on the same Redis with the same prefix, in any process, tells its listeners (the limiters'
 * deny caches), so that a lifted lockout or a reset key is not denied from a cache for the rest of a
 * denial. The subscription (a connection of its own, a duplicate of the client) is opened when the
 * first listener comes, and closed by {@link close}. Each time it is subscribed (the first time, and
 * again after a break) the listeners hear `undefined`, forget every key: a reset published before
 * then (while a denial was already cached, or while the connection was down) was not heard. Listeners
 * are held weakly (a limiter's core keeps its own): a collected limiter stops hearing. A client that
 * cannot subscribe (a node-redis pool), or a subscription that fails, leaves resets local; the cached
 * denials then expire by themselves.
 */
export class ResetChannel {
  private readonly listeners = new Set<WeakRef<(storageKey: string | undefined) => void>>();
  private subscription: Promise<(() => Promise<void>) | undefined> | undefined;
  private closed = false;

  constructor(
    private readonly adapter: ClientAdapter,
    private readonly channel: string,
  ) {}

  /** Adds a listener, subscribing on the first one. */
  listen(listener: (storageKey: string | undefined) => void): void {
    this.listeners.add(new WeakRef(listener));
    if (this.subscription !== undefined || this.closed || this.adapter.subscribe === undefined) return;
    this.subscription = this.adapter.subscribe(this.channel, (message) => this.heard(message), () => this.heard(undefined)).then(
      (close) => {
        // Closed while it was being opened: close it now.
        if (this.closed) return void close();
        return close;
      },
      () => undefined,
    );
  }

  /** Tells every process that `storageKey` was reset (a lost message is dropped: see the class comment). */
  publish(storageKey: string): void {
    if (this.closed) return;
    try {
      this.adapter.publish(this.channel, storageKey).catch(ignore);
    } catch {
      // A client without PUBLISH (a test double): the reset stays local.
    }
  }

  /** Closes the subscription's connection; resolves once it is closed. */
  async close(): Promise<void> {
    this.closed = true;
    const close = await this.subscription;
    await close?.();
  }

  private heard(storageKey: string | undefined): void {
    for (const ref of this.listeners) {
      const listener = ref.deref();
      if (listener === undefined) this.listeners.delete(ref);
      else listener(storageKey);
    }
  }
}

function ignore(): void {}
