import { randomBytes } from 'node:crypto';
import { ResetUnconfirmedError } from '@rl/core/store';
import type { ClientAdapter } from './clients/adapter.js';

/** The listeners a channel holds before it first looks for those of limiters gone (see `ResetChannel.listen`). */
const FIRST_LISTENER_SWEEP = 64;
/** What a store tells its listeners (see `Store.watchResets`): a key, or `undefined` for every key; `hearing: false` while notices cannot be heard. */
export type ResetListener = (storageKey: string | undefined, hearing?: boolean) => void;

/** A notice this store sent, waiting for its confirmations. */
interface PendingNotice {
  /** Redis's count of the connections that received it; undefined until PUBLISH answers. */
  receivers: number | undefined;
  confirmed: number;
  /** Set once the wait is over: the call settles as soon as the count is known. */
  expired: boolean;
  /** While it waits for the subscription to be live: what ends that wait. */
  stopWaiting: (() => void) | undefined;
  settle(error?: unknown): void;
}

/** Keys announced in one turn, and their callers. */
interface NoticeBatch {
  readonly keys: string[];
  readonly waiters: { resolve(): void; reject(error: unknown): void }[];
}

/**
 * The store's notices of resets (a reset, a ban or unban, an override set or cleared): what every
 * process's deny caches hear so that they forget a key, and the confirmations that let the call that
 * sent one resolve only once they have.
 *
 * - Channels: notices on `{<prefix>resets}`, each store's confirmations on `{<prefix>resets}:<id>`
 *   (`id`: random, per store). One hash tag: on a Cluster both are of one slot, so one connection per
 *   store subscribes to both, by sharded pub/sub on that slot's master, where `SPUBLISH` runs and counts.
 * - A notice is `<sender id>:<n>:<storage keys as a JSON array>` (the keys announced in one turn of
 *   the event loop). Each subscribed store, on reading it, tells its listeners (synchronously: the deny
 *   caches forget the keys), then publishes `<n>` on the sender's
 *   confirmation channel. The sender's call resolves once the confirmations number the receivers
 *   Redis counted (`PUBLISH`'s reply: the subscriptions live when the notice was published; the sender's
 *   own among them), or rejects with `ResetUnconfirmedError` after `confirmTimeoutMs` (the change is
 *   applied; an instance that did not confirm forgets the key when it reads the notice).
 * - A store that is not subscribed cannot be told: its listeners hear `hearing: false` from the moment
 *   its subscription is not live (before it first is, and as soon as it breaks) until it is live again,
 *   then `undefined` (forget everything: notices may have been missed). The deny cache neither answers
 *   nor remembers meanwhile.
 * - The subscription (a connection of the store's, see src/clients/subscription.ts) opens with the
 *   first listener or the first notice sent, and closes with {@link close} or when the user's client
 *   closes. Listeners are held weakly (a limiter's core keeps its own).
 * - A client that cannot subscribe (a node-redis pool), or a Redis that refuses the subscription
 *   (`SSUBSCRIBE` on a Cluster before Redis 7), publishes its notices without waiting for
 *   confirmations, and its listeners are never told `hearing: false`: its cached denials expire by
 *   themselves (a notice from another instance is not heard).
 */
export class ResetChannel {
  /** This store's name on the channels. */
  private readonly id = randomBytes(9).toString('base64url');
  private readonly notices: string;
  private readonly confirmations: string;
  private readonly listeners = new Set<WeakRef<ResetListener>>();
  /** The count of listeners at which {@link listen} next drops those whose limiters are gone. */
  private sweepAt = FIRST_LISTENER_SWEEP;
  /** What closes the subscription, once opened. */
  private unsubscribe: (() => Promise<void>) | undefined;
  private live = false;
  /** Redis refused the subscription: notices go out unconfirmed, listeners hear what this process does. */
  private refused = false;
  private closed = false;
  /** Calls waiting for the subscription to be live (or refused) before they publish. */
  private readonly waitingLive = new Set<() => void>();
  private readonly pending = new Map<string, PendingNotice>();
  private sent = 0;
  /** The keys announced in this turn of the event loop, sent together after it. */
  private batch: NoticeBatch | undefined;

  constructor(
    private readonly adapter: ClientAdapter,
    prefix: string,
    /** How long a notice waits for its confirmations, in ms. */
    private readonly confirmTimeoutMs: number,
  ) {
    this.notices = `{${prefix}resets}`;
    this.confirmations = `${this.notices}:${this.id}`;
  }

  /**
   * Adds a listener (subscribing on the first one), and tells it at once whether notices are heard now.
   * The listeners of limiters gone are dropped here too, when their count has doubled since the last
   * look: a quiet process that makes limiters on the fly hears no notice that would drop them.
   */
  listen(listener: ResetListener): void {
    if (this.listeners.size >= this.sweepAt) {
      for (const ref of this.listeners) if (ref.deref() === undefined) this.listeners.delete(ref);
      this.sweepAt = Math.max(FIRST_LISTENER_SWEEP, 2 * this.listeners.size);
    }
    this.listeners.add(new WeakRef(listener));
    if (!this.subscribes) return;
    this.open();
    // What it remembered before it listened may already be stale: forgotten; not live yet: deaf until then.
    listener(undefined, this.live);
  }

  /**
   * Tells every process that `storageKey` was reset (or banned, unbanned, overridden); resolves once
   * every store that received the notice confirmed that its listeners heard it, and rejects with
   * `ResetUnconfirmedError` when some did not within the confirmation timeout. The keys announced in
   * one turn of the event loop go in one notice (a bulk of bans costs one round of confirmations per
   * turn, not one per key).
   */
  announce(storageKey: string): Promise<void> {
    let batch = this.batch;
    if (batch === undefined) {
      const created: NoticeBatch = { keys: [], waiters: [] };
      batch = this.batch = created;
      // After the turn's I/O: the controls whose writes Redis answered together share the notice.
      setImmediate(() => {
        if (this.batch === created) this.batch = undefined;
        try {
          this.send(created);
        } catch (error) {
          // Never thrown where nobody catches it: the calls waiting for the notice reject with it.
          for (const waiter of created.waiters) waiter.reject(error);
        }
      });
    }
    batch.keys.push(storageKey);
    return new Promise((resolve, reject) => batch.waiters.push({ resolve, reject }));
  }

  /** Publishes `batch`'s notice and settles its callers once it is confirmed (or not: see {@link announce}). */
  private send(batch: NoticeBatch): void {
    const number = String(++this.sent);
    const message = `${this.id}:${number}:${JSON.stringify(batch.keys)}`;
    const settle = (error?: unknown): void => {
      for (const waiter of batch.waiters) {
        if (error === undefined) waiter.resolve();
        else waiter.reject(error);
      }
    };
    if (!this.subscribes) {
      this.publish(message).then(() => settle(), settle);
      return;
    }
    this.open();
    const notice: PendingNotice = {
      receivers: undefined,
      confirmed: 0,
      expired: false,
      stopWaiting: undefined,
      settle: (error) => {
        clearTimeout(timer);
        this.pending.delete(number);
        settle(error);
      },
    };
    // The wait for the subscription (this store's first notice) is bounded, and the confirmations'
    // wait, which starts once Redis has counted the receivers: a queue of this client's own commands
    // before the PUBLISH is not the receivers' delay.
    let timer = setTimeout(() => {
      notice.expired = true;
      // Not live by now: published all the same (others hear it), and settled unconfirmed.
      notice.stopWaiting?.();
      this.check(notice);
    }, this.confirmTimeoutMs);
    this.pending.set(number, notice);
    this.whenLive(notice)
      .then(() => {
        // Live (or given up on): the PUBLISH is a Redis call like the change's own write, not bounded here.
        clearTimeout(timer);
        return this.publish(message);
      })
      .then(
        (receivers) => {
          // Refused meanwhile: nobody can confirm. Live, this store is a receiver itself: none counted
          // means its subscription was dropped unannounced (the channel's slot moved): opened again, and
          // the notice waits for a confirmation that cannot come (ResetUnconfirmedError).
          const counted = this.refused ? 0 : Number(receivers);
          const dropped = counted === 0 && this.live;
          if (dropped) this.reopen();
          notice.receivers = dropped ? 1 : counted;
          if (!notice.expired) {
            timer = setTimeout(() => {
              notice.expired = true;
              this.check(notice);
            }, this.confirmTimeoutMs);
          }
          this.check(notice);
        },
        (error: unknown) => notice.settle(error),
      );
  }

  /** Publishes a notice; a client that throws at once (closed, or without the command) rejects. */
  private publish(message: string): Promise<number> {
    return Promise.resolve().then(() => this.adapter.publish(this.notices, message));
  }

  /** Closes the subscription's connection; resolves once it is closed. Notices still waiting are settled unconfirmed. */
  async close(): Promise<void> {
    this.closed = true;
    for (const notice of this.pending.values()) notice.settle(this.unconfirmed(notice));
    for (const done of this.waitingLive) done();
    await this.unsubscribe?.();
  }

  private get subscribes(): boolean {
    return this.adapter.subscribe !== undefined && !this.refused && !this.closed;
  }

  private open(): void {
    if (this.unsubscribe !== undefined || !this.subscribes) return;
    this.unsubscribe = this.adapter.subscribe!({
      channels: [this.notices, this.confirmations],
      onMessage: (channel, message) => this.heard(channel, message),
      onLive: (live) => {
        this.live = live;
        this.tell(undefined, live);
        if (live) this.wake();
      },
      onRefused: () => {
        this.refused = true;
        this.live = false;
        // Back to what the listeners do alone: they remember, and their denials expire by themselves.
        this.tell(undefined, true);
        this.wake();
      },
    });
  }

  /** Closes the subscription and opens it again (its listeners deaf until it is live again). */
  private reopen(): void {
    const closing = this.unsubscribe;
    this.unsubscribe = undefined;
    this.live = false;
    this.tell(undefined, false);
    void (closing?.() ?? Promise.resolve()).catch(ignore).then(() => this.open());
  }

  /** Resolves once the subscription is live (or cannot be), or once `notice`'s wait is over. */
  private whenLive(notice: PendingNotice): Promise<void> {
    if (this.live || this.refused || this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        this.waitingLive.delete(done);
        notice.stopWaiting = undefined;
        resolve();
      };
      this.waitingLive.add(done);
      notice.stopWaiting = done;
    });
  }

  private wake(): void {
    for (const done of [...this.waitingLive]) done();
  }

  /** Settles `notice` when it has all its confirmations, or when its wait is over and its count known. */
  private check(notice: PendingNotice): void {
    if (notice.receivers === undefined) return;
    if (notice.confirmed >= notice.receivers) notice.settle();
    else if (notice.expired) notice.settle(this.unconfirmed(notice));
  }

  private unconfirmed(notice: PendingNotice): ResetUnconfirmedError {
    return new ResetUnconfirmedError(
      Math.max(notice.receivers ?? 0, notice.confirmed),
      notice.confirmed,
      this.confirmTimeoutMs,
    );
  }

  /** A message on one of the channels: a notice (told, then confirmed to its sender), or a confirmation of this store's. */
  private heard(channel: string, message: string): void {
    if (channel === this.confirmations) return this.confirm(message);
    const idEnd = message.indexOf(':');
    const numberEnd = message.indexOf(':', idEnd + 1);
    const keys = idEnd > 0 && numberEnd > 0 ? keysOf(message.slice(numberEnd + 1)) : undefined;
    // Not a notice of a store (someone else's message on the channel): nothing to forget or confirm.
    if (keys === undefined) return;
    for (const key of keys) this.tell(key, true);
    const sender = message.slice(0, idEnd);
    const number = message.slice(idEnd + 1, numberEnd);
    // This store's own notice: its listeners have heard it, confirmed here (not through Redis).
    if (sender === this.id) return this.confirm(number);
    try {
      this.adapter.publish(`${this.notices}:${sender}`, number).catch(ignore);
    } catch {
      // A client closed meanwhile: the sender's wait ends unconfirmed.
    }
  }

  /** One more confirmation of this store's notice `number` (unknown once settled: ignored). */
  private confirm(number: string): void {
    const notice = this.pending.get(number);
    if (notice === undefined) return;
    notice.confirmed++;
    this.check(notice);
  }

  private tell(storageKey: string | undefined, hearing: boolean): void {
    for (const ref of this.listeners) {
      const listener = ref.deref();
      if (listener === undefined) this.listeners.delete(ref);
      else listener(storageKey, hearing);
    }
  }
}

function ignore(): void {}

/** The storage keys of a notice (a JSON array of strings), or undefined for anything else. */
function keysOf(text: string): string[] | undefined {
  try {
    const keys: unknown = JSON.parse(text);
    return Array.isArray(keys) && keys.every((key) => typeof key === 'string') ? (keys as string[]) : undefined;
  } catch {
    return undefined;
  }
}
