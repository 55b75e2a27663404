import { MEMORY_STORE_CAPABILITIES } from '@rl/store-memory';
import type {
  Algorithm,
  Charge,
  ChargeAllOptions,
  Charged,
  ConcurrencyAlgorithm,
  Decision,
  GiveBack,
  Settlement,
  Store,
  StoreCapabilities,
  StoredOverride,
  TimedCharge,
} from '@rl/core/store';
import { charged, decision, none } from './answers.js';
import { AlgorithmCache, wireAlgorithm, type Verb, type WireAlgorithm } from './wire.js';

/** A listener of `Store.watchResets`. */
type ResetListener = (storageKey: string | undefined, hearing?: boolean) => void;

/**
 * A store whose every call is decided by a holder (wire.ts, holder.ts) on a memory store elsewhere:
 * the `Store` verbs as wire calls and their answers read back, the algorithms' wire forms, and the
 * listeners of resets. How a call reaches the holder is the subclass's {@link WireStore.call} (the
 * cluster store: batched per turn on a channel; the Durable Object store: one subrequest), and so is
 * `chargeAll` (one call, or one per object).
 */
export abstract class WireStore implements Store {
  /** What the holder's memory store runs; `local: false`, so the limiter applies its timeout and deny cache. */
  readonly capabilities: StoreCapabilities;
  /** The wire form of each algorithm seen (made once per algorithm object). */
  private readonly wired = new WeakMap<Algorithm, WireAlgorithm>();
  /** Algorithms made again from the holder's answers (an override read back). */
  private readonly algorithms = new AlgorithmCache();
  private readonly listeners = new Set<WeakRef<ResetListener>>();

  /**
   * `who` names the holder in the errors read from its answers (`rl cluster holder`);
   * `hearsEveryInstance`: false for a store whose notices name only its own instance's controls (see
   * `StoreCapabilities.hearsEveryInstance`).
   */
  constructor(
    protected readonly who: string,
    hearsEveryInstance = true,
  ) {
    this.capabilities = hearsEveryInstance
      ? { ...MEMORY_STORE_CAPABILITIES, local: false }
      : { ...MEMORY_STORE_CAPABILITIES, local: false, hearsEveryInstance: false };
  }

  /**
   * Sends one call of `verb` (about `key`: where a store places it) with `args` (wire.ts's table);
   * resolves to its answer's value read by `read`, rejects with the holder's error or the way's.
   */
  protected abstract call(
    key: string,
    verb: Verb,
    args: unknown[],
    read: (value: unknown) => unknown,
  ): Promise<unknown>;

  abstract chargeAll(charges: readonly TimedCharge[], options: ChargeAllOptions): readonly Promise<Charged>[];

  charge(charge: Charge, now: number | undefined): Promise<Charged> {
    return this.call(charge.key, 'charge', [this.wireCharge(charge), now ?? null], (value) =>
      charged(value, charge.algorithm, this.who),
    ) as Promise<Charged>;
  }

  peek(key: string, algorithm: Algorithm, cost: number, now: number | undefined): Promise<Decision> {
    return this.call(key, 'peek', [key, this.wire(algorithm), cost, now ?? null], (value) =>
      decision(value, algorithm, this.who),
    ) as Promise<Decision>;
  }

  giveBack(back: GiveBack, now: number | undefined): Promise<void> {
    return this.call(
      back.key,
      'giveBack',
      [{ ...back, algorithm: this.wire(back.algorithm) }, now ?? null],
      none,
    ) as Promise<void>;
  }

  settle(key: string, algorithm: Algorithm, settlement: Settlement, now: number | undefined): Promise<void> {
    return this.call(key, 'settle', [key, this.wire(algorithm), settlement, now ?? null], none) as Promise<void>;
  }

  ban(key: string, algorithm: Algorithm, durationMs: number, now: number | undefined): Promise<void> {
    return this.call(key, 'ban', [key, this.wire(algorithm), durationMs, now ?? null], none) as Promise<void>;
  }

  unban(key: string, algorithm: Algorithm): Promise<void> {
    return this.call(key, 'unban', [key, this.wire(algorithm)], none) as Promise<void>;
  }

  setOverride(key: string, override: Algorithm, ttlMs: number, now: number | undefined): Promise<void> {
    return this.call(key, 'setOverride', [key, this.wire(override), ttlMs, now ?? null], none) as Promise<void>;
  }

  getOverride(key: string, algorithm: Algorithm, now: number | undefined): Promise<StoredOverride | undefined> {
    return this.call(key, 'getOverride', [key, this.wire(algorithm), now ?? null], (value) => {
      if (value === null) return undefined;
      const { algorithm: wire, expiresAt } = value as { algorithm: unknown; expiresAt: number };
      return { algorithm: this.algorithms.algorithm(wire, 'override'), expiresAt };
    }) as Promise<StoredOverride | undefined>;
  }

  clearOverride(key: string, algorithm: Algorithm): Promise<void> {
    return this.call(key, 'clearOverride', [key, this.wire(algorithm)], none) as Promise<void>;
  }

  reset(key: string, algorithm: Algorithm): Promise<void> {
    return this.call(key, 'reset', [key, this.wire(algorithm)], none) as Promise<void>;
  }

  acquire(key: string, algorithm: ConcurrencyAlgorithm, leaseId: string, now: number | undefined): Promise<Decision> {
    return this.call(key, 'acquire', [key, this.wire(algorithm), leaseId, now ?? null], (value) =>
      decision(value, algorithm, this.who),
    ) as Promise<Decision>;
  }

  release(key: string, algorithm: ConcurrencyAlgorithm, leaseId: string): Promise<void> {
    return this.call(key, 'release', [key, this.wire(algorithm), leaseId], none) as Promise<void>;
  }

  /**
   * Tells `listener` each key reset, banned, unbanned or overridden that the holder's notices name,
   * and `undefined` when notices may have been missed (which notices reach this store is the
   * subclass's: see its doc). Held weakly.
   */
  watchResets(listener: ResetListener): void {
    this.listeners.add(new WeakRef(listener));
    // Deaf to other instances' controls: said at once, so that a deny cache remembers nothing.
    if (!this.hearsEveryInstance) listener(undefined, false);
  }

  /** Whether this store hears every instance's controls (a cluster holder tells every worker): see `StoreCapabilities.hearsEveryInstance`. */
  private get hearsEveryInstance(): boolean {
    return this.capabilities.hearsEveryInstance !== false;
  }

  /** Tells the listeners of a notice (`undefined`: forget every key). */
  protected tell(storageKey: string | undefined): void {
    const hearing = this.hearsEveryInstance ? undefined : false;
    for (const ref of this.listeners) {
      const listener = ref.deref();
      if (listener === undefined) this.listeners.delete(ref);
      else listener(storageKey, hearing);
    }
  }

  /** Stops telling the listeners (a closed store). */
  protected forgetListeners(): void {
    this.listeners.clear();
  }

  /** A charge as it crosses the wire (its algorithm's wire form). */
  protected wireCharge(charge: Charge): unknown {
    return { ...charge, algorithm: this.wire(charge.algorithm) };
  }

  private wire(algorithm: Algorithm): WireAlgorithm {
    let wire = this.wired.get(algorithm);
    if (wire === undefined) {
      wire = wireAlgorithm(algorithm);
      this.wired.set(algorithm, wire);
    }
    return wire;
  }
}
