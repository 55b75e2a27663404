import { reportObserverError } from '../observe/observation.js';
import type { AdaptiveConcurrencyEvent, Observer } from '../observe/observer.js';

/** An event of an adaptive limit before it is named: what every watcher hears, under its own name. */
export type AdaptiveEventState = Omit<AdaptiveConcurrencyEvent, 'limit'>;

/** Told of what an adaptive limit does; `name` is the limit's name in the events. */
interface Watcher {
  readonly name: string;
  readonly listener: (event: AdaptiveConcurrencyEvent) => void;
}

/**
 * Who hears an adaptive limit's events: listeners (`watch`) and observers (`observe`, once each). The
 * list is replaced, never changed in place, so a listener that stops itself while being told does not
 * skip the next one.
 */
export class AdaptiveWatchers {
  private watchers: readonly Watcher[] = [];
  private readonly observers = new Set<Observer>();

  /** True when someone listens (an event is built only then). */
  get heard(): boolean {
    return this.watchers.length > 0;
  }

  /** @see AdaptiveConcurrency.watch */
  watch(name: string, listener: (event: AdaptiveConcurrencyEvent) => void): () => void {
    const watcher = { name, listener };
    this.watchers = [...this.watchers, watcher];
    return () => {
      this.watchers = this.watchers.filter((w) => w !== watcher);
    };
  }

  /** @see AdaptiveConcurrency.observe */
  observe(name: string, observer: Observer): void {
    if (this.observers.has(observer)) return;
    this.observers.add(observer);
    this.watch(name, (event) => {
      try {
        const returned: unknown = observer.adaptive?.(event);
        if (returned instanceof Promise) returned.catch((error: unknown) => reportObserverError(observer, error));
      } catch (error) {
        reportObserverError(observer, error);
      }
    });
  }

  /** Tells every watcher of `state`, under its name. */
  tell(state: AdaptiveEventState): void {
    for (const w of this.watchers) w.listener({ limit: w.name, ...state });
  }
}
