import type { Algorithm } from '../algorithm.js';
import type { Duration } from '../duration.js';
import { InvalidOptionError, UnsupportedError } from '../errors.js';
import { checkOptions, isPrintableAscii, spanOption } from '../options.js';
import { warnShortSpan } from '../short-span.js';
import { chargeOptionsOf, checkKey, rateCall } from './call-input.js';
import type { LimiterCore } from './core.js';
import type { LeaseDecision } from './lease.js';
import type { MaybePromise } from '../store/interface.js';
import { parseMaxDelay, type Reservation, type ReserveOptions } from './reservation.js';

export { clearOverrideOf, getOverrideOf, setOverrideOf, type OverrideOptions } from './overrides.js';

/** The options of `limiter.block`. */
export interface BlockOptions {
  /** Why the key is banned, for the `'block'` event and the logs (printable ASCII, at most 200 characters). */
  reason?: string;
}

/** What a `'block'` event tells: a key banned through this limiter, for how long, and why. */
export interface BlockEvent {
  readonly key: string;
  readonly durationMs: number;
  readonly reason: string | undefined;
}

/** `limiter.reserve` (see there): the options checked, then the one charge path with a `maxDelay`. */
export function reserveOf(core: LimiterCore, key: string, cost: number, options: ReserveOptions | undefined): Promise<Reservation> {
  if (options === null || typeof options !== 'object') throw new InvalidOptionError('limiter.reserve.options', options, '{ maxDelay } (and optionally algorithm)');
  const { algorithm, idempotency } = chargeOptionsOf(core, options, cost, 'limiter.reserve.options', ['maxDelay']);
  const a = rateCall(core, key, cost, algorithm);
  const maxDelayMs = parseMaxDelay(options.maxDelay, a, 'limiter.reserve.maxDelay');
  if (core.store.capabilities.reservations !== true) {
    throw new UnsupportedError('This store does not run reservations: use a store whose capabilities include reservations, such as MemoryStore or RedisStore.');
  }
  const result = core.charge(key, cost, a, maxDelayMs, idempotency);
  return result instanceof Promise ? result.then((d) => core.reservation(d, key, cost, a)) : Promise.resolve(core.reservation(result, key, cost, a));
}

/** `limiter.block` (see there): the key, the duration and the options checked, then the ban in the store; returns the event to emit. */
export async function blockOf(core: LimiterCore, key: string, duration: Duration, options: BlockOptions | undefined): Promise<BlockEvent> {
  checkKey(key);
  const durationMs = spanOption(duration, 'limiter.block.duration');
  warnShortSpan(duration, 'limiter.block.duration');
  const o = checkOptions(options === undefined ? {} : options, ['reason'], 'limiter.block.options');
  const reason = o.reason;
  if (reason !== undefined && (typeof reason !== 'string' || reason.length > 200 || !isPrintableAscii(reason))) {
    throw new InvalidOptionError('limiter.block.options.reason', reason, 'printable ASCII text of at most 200 characters');
  }
  checkBans(core, 'limiter.block');
  await controlOf(core, key, 'ban', durationMs);
  return { key, durationMs, reason: reason as string | undefined };
}

/** `limiter.unblock` (see there). */
export async function unblockOf(core: LimiterCore, key: string): Promise<void> {
  checkKey(key);
  checkBans(core, 'limiter.unblock');
  await controlOf(core, key, 'unban');
}

/** An operator's call on `key` in every state layout it may have (see `CallAlgorithms`; a ban or unban: every rate layout), each as `LimiterCore.operate`. */
export async function controlOf(core: LimiterCore, key: string, what: 'reset' | 'ban' | 'unban', durationMs = 0): Promise<void> {
  if (what === 'reset') core.quota?.forget(core.keyPrefix + key);
  const store = core.store;
  const one = (a: Algorithm) => (storeKey: string, now: number | undefined) => (what === 'reset' ? store.reset(storeKey, a) : what === 'ban' ? store.ban!(storeKey, a, durationMs, now) : store.unban!(storeKey, a));
  await Promise.all(Array.from(what === 'reset' ? core.calls.layouts() : core.calls.banLayouts(), (a) => core.operate(key, what, one(a))));
}

/** Throws unless the limiter checks bans (option `bans`, or `blockDuration`) on a store that holds them. */
function checkBans(core: LimiterCore, verb: string): void {
  if (!core.bans) {
    throw new UnsupportedError(`${verb}() needs a limiter that checks bans: create it with bans: true (each decision then reads the key's ban in the same store step), or with blockDuration.`);
  }
}

/** `limiter.acquire` (see there): a permit of a concurrency limit. */
export function acquireOf(core: LimiterCore, key: string): MaybePromise<LeaseDecision> {
  checkKey(key);
  if (!core.isConcurrencyLimit) {
    throw new UnsupportedError(`limiter.acquire(key) is for concurrency limits; this limiter is a ${core.algorithm?.kind ?? 'rate'} limit: call consume(key, cost).`);
  }
  return core.acquire(key);
}
