/**
 * The life of the store's subscriber connection, whatever the client's family (the families give
 * {@link SubscriberPlan}s: src/clients/ioredis.ts, src/clients/node-redis.ts).
 *
 * Closing the user's client closes it, at any moment (before it connects, while it subscribes, once
 * live): the plan's `watchEnd` is registered first, synchronously, before any connection is made, and
 * a client already closed opens none. Closing the store closes it too and removes that listener, so a
 * closed store leaves nothing on the client. A break (the connection lost, the server gone) is told
 * at once (`onLive(false)`); the connection is then closed and a new one opened after a pause (the
 * server may be gone for good, a Cluster's master may have moved): {@link REOPEN_FIRST_MS}, doubling up
 * to {@link REOPEN_MAX_MS}, on a timer that does not keep the process alive. It is live again
 * (`onLive(true)`) once the server has confirmed the subscription of the new connection: a message
 * published after that confirmation reaches it.
 */
import type { SubscriptionHandlers } from './adapter.js';

/** A connection in subscriber mode, made by a {@link SubscriberPlan}. */
export interface SubscriberConnection {
  /** Subscribes to the channels (connecting first where the family needs it); resolves once the server has confirmed. */
  subscribe(): Promise<unknown>;
  /** Closes the connection for good (its own reconnection stopped); never throws. */
  close(): void;
}

/** What a connection tells its subscription. */
export interface ConnectionEvents {
  message(channel: string, message: string): void;
  /** The connection was lost (or failed to connect): it will not be used again. */
  broken(): void;
}

/** How one family makes the store's subscriber connections (see the module comment). */
export interface SubscriberPlan {
  /** A new connection to the server that serves the channels, or undefined when there is none yet (a Cluster without a slot table). */
  open(events: ConnectionEvents): SubscriberConnection | undefined | Promise<SubscriberConnection | undefined>;
  /** Calls `ended` once the user's client is closed; returns what removes that listener. */
  watchEnd(ended: () => void): () => void;
  /** True once the user's client is closed (by its owner, or it stopped reconnecting). */
  ended(): boolean;
  /** True when `error` is Redis's refusal of the subscription itself (an unknown command): retrying will not help. */
  refused(error: unknown): boolean;
}

/** An event emitter of the user's (a client, a Cluster's node), as far as {@link listenBeside} uses it. */
export interface ListenedEmitter<E extends string> {
  on(event: E, listener: () => void): unknown;
  off(event: E, listener: () => void): unknown;
  getMaxListeners?(): number;
  setMaxListeners?(count: number): unknown;
}

/**
 * Adds `listener` to the user's `emitter` and returns what removes it. Each store on a client adds one
 * (its subscription's watch of the client's end): the emitter's listener bound is raised by one while
 * it is there, so that eleven stores on one client print no `MaxListenersExceededWarning` (the bound
 * is for leaks; these listeners are counted and removed with their store). An unbounded emitter (0)
 * stays unbounded.
 */
export function listenBeside<E extends string>(
  emitter: ListenedEmitter<E>,
  event: E,
  listener: () => void,
): () => void {
  const bound = (by: number): void => {
    const max = emitter.getMaxListeners?.();
    if (max !== undefined && max > 0) emitter.setMaxListeners?.(max + by);
  };
  bound(1);
  emitter.on(event, listener);
  let removed = false;
  return () => {
    if (removed) return;
    removed = true;
    emitter.off(event, listener);
    bound(-1);
  };
}

/** The first pause before a new connection after a break, in ms. */
export const REOPEN_FIRST_MS = 50;
/** The longest pause between two connections, in ms. */
export const REOPEN_MAX_MS = 2_000;

/**
 * Keeps a subscriber connection live as `plan` makes them (see the module comment) and tells
 * `handlers`; returns what closes it (once; later calls resolve at once).
 */
export function keepSubscribed(plan: SubscriberPlan, handlers: SubscriptionHandlers): () => Promise<void> {
  let connection: SubscriberConnection | undefined;
  let timer: NodeJS.Timeout | undefined;
  let pause = REOPEN_FIRST_MS;
  let live = false;
  let closed = false;

  const setLive = (value: boolean): void => {
    if (closed || live === value) return;
    live = value;
    handlers.onLive(value);
  };
  const close = async (): Promise<void> => {
    if (closed) return;
    // Not live any more: told before anything else, so that no cached denial outlives the connection.
    setLive(false);
    closed = true;
    removeEnd();
    if (timer !== undefined) clearTimeout(timer);
    connection?.close();
    connection = undefined;
  };
  const reopenLater = (): void => {
    if (closed || timer !== undefined) return;
    timer = setTimeout(() => {
      timer = undefined;
      void open();
    }, pause);
    // A pending reconnection never keeps the process alive: a process that is done exits.
    timer.unref();
    pause = Math.min(pause * 2, REOPEN_MAX_MS);
  };
  const open = async (): Promise<void> => {
    if (closed) return;
    if (plan.ended()) return void close();
    let made: SubscriberConnection | undefined;
    const events: ConnectionEvents = {
      message: (channel, message) => {
        if (!closed && connection === made) handlers.onMessage(channel, message);
      },
      broken: () => {
        if (closed || connection !== made || made === undefined) return;
        setLive(false);
        connection = undefined;
        made.close();
        reopenLater();
      },
    };
    try {
      made = await plan.open(events);
    } catch {
      made = undefined;
    }
    if (made === undefined) return reopenLater();
    // Closed while it was being made (the user's client, or the store): closed at once.
    if (closed) return made.close();
    connection = made;
    made.subscribe().then(
      () => {
        if (closed || connection !== made) return;
        pause = REOPEN_FIRST_MS;
        setLive(true);
      },
      (error: unknown) => {
        if (closed || connection !== made) return;
        if (plan.refused(error)) {
          connection = undefined;
          made.close();
          handlers.onRefused(error);
          void close();
        } else events.broken();
      },
    );
  };

  // First, before any connection exists: the user's client closing closes whatever is open then.
  const removeEnd = plan.watchEnd(() => void close());
  void open();
  return close;
}
