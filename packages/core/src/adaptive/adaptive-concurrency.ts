import type { AdaptiveConcurrencyEvent, Observer } from '../observe/observer.js';
import { AdaptiveWatchers } from './adaptive-watchers.js';
import { unrefTimer, type TimerHandle } from '../timers.js';
import { BaselineProbe, type ProbeWork } from './baseline-probe.js';
import { CutResponse } from './cut-response.js';
import { LatencyWindowBuilder } from './latency-window.js';
import { parseAdaptiveOptions, type AdaptiveConcurrencyOptions, type AdaptiveConfig } from './options.js';
import type { Priority } from './priority.js';
import { HeldPermit, type AdaptivePermit, type PermitOutcome } from './held-permit.js';

export type { AdaptivePermit, PermitOutcome } from './held-permit.js';

/** Latency up to this many times the baseline is explained by it (its tolerance of queueing): no periodic probe is needed. */
const EXPLAINED = 1.5;
/** Work that ran above `min` and came back this share of the baseline or less: the backend got faster, measured again. */
const FASTER = 0.9;

/** What one class of work came to so far, in an {@link AdaptiveSnapshot}. */
export interface AdaptiveClassCounts {
  /** Permits of the class held now. */
  readonly inFlight: number;
  readonly admitted: number;
  readonly shed: number;
  /** Released failed, or never released within `maxHold`. */
  readonly failed: number;
}

/** The state of an adaptive limit now ({@link AdaptiveConcurrency.snapshot}). */
export interface AdaptiveSnapshot {
  /** Permits now: the limit's floor, within `[min, max]` (`min` during a probe). */
  readonly permits: number;
  /** Permits held now. */
  readonly inFlight: number;
  /** The baseline in ms (the backend's unloaded latency, from the last probe); undefined until one ended. */
  readonly minLatencyMs: number | undefined;
  /** The median latency of the last window closed, in ms; undefined before one. */
  readonly latencyMs: number | undefined;
  /** A probe of the baseline is running. */
  readonly probing: boolean;
  /** Per class label (`critical`, `normal`, `sheddable`, `share-0.7`). */
  readonly classes: Readonly<Record<string, AdaptiveClassCounts>>;
}

interface MutableCounts {
  inFlight: number;
  admitted: number;
  shed: number;
  failed: number;
}

/**
 * A concurrency limit whose number moves with the latency and the failures of the work it guards (see
 * docs/design/adaptive-concurrency.md): at most {@link permits} pieces of work at once, where the
 * limit is derived from a baseline (the backend's unloaded latency, measured by probes at `min`) and
 * the latency of recent work, by a {@link LimitController}. Per process, with no store: it limits what
 * this instance sends to its backend. Priorities: work of a class is admitted while the permits held
 * are below the class's share of the limit, so the lowest class is shed first.
 *
 * All in the process's memory and synchronous; time from `timers` (fake timers make it deterministic).
 */
export class AdaptiveConcurrency {
  private readonly config: AdaptiveConfig;
  /** The limit as a real number (the controller's); the permits are its floor. */
  private limit: number;
  private inFlightCount = 0;
  /** Permit-ms held so far (permits held × time, summed), up to {@link heldUpTo}: what a permit held on average while it ran. */
  private heldMs = 0;
  private heldUpTo: number;
  private baseline: number | undefined = undefined;
  private lastLatency: number | undefined = undefined;
  private probe: BaselineProbe | undefined;
  private probeEndedAt = 0;
  /** When the controller last judged a window (0 before any). */
  private judgedAt = 0;
  /**
   * When a probe last left a limit its baseline did not size: raised to the offered load, or restored
   * after the baseline fell to half or less (sized for a slower backend). No probe until the controller
   * judged it: a queue it builds is the controller's to shrink, not a backend that slowed down again.
   */
  private unjudgedSince = -Infinity;
  /**
   * The most permits held by the work of the windows judged since the last probe (work that completed:
   * what started after a backend slowed down is not in it): whether the limit was ever filled.
   */
  private peakJudged = 0;
  private nextProbeAt = Infinity;
  /**
   * The baseline was measured from work that started with more than `min` permits held (the first
   * probe's, at `initial`, under a load): it may hold a queue, which the controller would then keep at
   * its target for good. Measured again at `min` once a baseline has passed.
   */
  private baselineQueued = false;
  /** When the running work's ages are looked at next (once a window). */
  private nextAgeCheckAt = 0;
  /** Changes with the permits: work acquired under another epoch says nothing of the limit now. */
  private epoch = 0;
  private readonly window: LatencyWindowBuilder;
  /** Whether the latency answers the controller's cuts (a backend slower by less than `reprobeAbove` does not). */
  private readonly cuts = new CutResponse();
  /** Permits held, in acquire order (the order they expire in). */
  private readonly held = new Set<HeldPermit>();
  private expiry: TimerHandle | undefined = undefined;
  private readonly counts = new Map<string, MutableCounts>();
  private readonly watchers = new AdaptiveWatchers();

  constructor(options: AdaptiveConcurrencyOptions = {}) {
    this.config = parseAdaptiveOptions(options);
    this.limit = this.config.initial;
    const now = this.config.timers.now();
    this.heldUpTo = now;
    this.window = new LatencyWindowBuilder(now);
    // The first baseline is measured at the initial limit (nothing is known yet to lower it for).
    this.probe = this.probeAt(now, this.config.initial);
  }

  /** The permits now (within `[min, max]`; the probe's during a probe). */
  get permits(): number {
    const probe = this.probe;
    if (probe !== undefined) return probe.atPermits;
    return Math.min(this.config.max, Math.max(this.config.min, Math.floor(this.limit)));
  }

  /** Permits held now. */
  get inFlight(): number {
    return this.inFlightCount;
  }

  /** How long a refused client should wait, in ms: the baseline (a round trip frees permits), at least a second. */
  get retryAfterMs(): number {
    return Math.max(1000, Math.ceil(this.baseline ?? 0));
  }

  /** The controller's name (`gradient`, `aimd`). */
  get controllerName(): string {
    return this.config.controller.name;
  }

  /**
   * A permit for one piece of work of class `priority` (default `normal`), or undefined when the
   * permits held reach the class's share of the limit (shed). A bad priority throws an
   * `InvalidOptionError` and takes nothing.
   */
  tryAcquire(priority?: Priority): AdaptivePermit | undefined {
    const cls = this.config.classes.of(priority, 'priority');
    const now = this.config.timers.now();
    this.tick(now);
    const probe = this.probe;
    probe?.arrived();
    const counts = this.countsOf(cls.label);
    if (this.inFlightCount >= Math.max(1, Math.floor(this.permits * cls.share))) {
      counts.shed++;
      this.tell('shed', cls.label, undefined);
      return undefined;
    }
    this.sumHeld(now);
    const permit = new HeldPermit({
      onEnd: this.ended,
      cls,
      acquiredAt: now,
      epoch: this.epoch,
      inFlightAtStart: this.inFlightCount + 1,
      heldAtStart: this.heldMs,
    });
    probe?.admitted(permit);
    this.inFlightCount++;
    counts.inFlight++;
    counts.admitted++;
    this.held.add(permit);
    if (this.expiry === undefined) this.scheduleExpiry(now);
    this.tell('admitted', cls.label, undefined);
    return permit;
  }

  /** The state now, for dashboards and tests. */
  snapshot(): AdaptiveSnapshot {
    const classes: Record<string, AdaptiveClassCounts> = {};
    for (const [label, c] of this.counts) classes[label] = { ...c };
    return {
      permits: this.permits,
      inFlight: this.inFlightCount,
      minLatencyMs: this.baseline,
      latencyMs: this.lastLatency,
      probing: this.probe !== undefined,
      classes,
    };
  }

  /**
   * Tells `listener` of each event, named `name`; returns a function that stops it. The listener runs
   * inside `tryAcquire` and `release`, synchronously: it must not throw (an observer given to
   * {@link observe} is guarded instead).
   */
  watch(name: string, listener: (event: AdaptiveConcurrencyEvent) => void): () => void {
    return this.watchers.watch(name, listener);
  }

  /**
   * Tells `observer.adaptive` of each event under this limit's `name` (once per observer: middlewares
   * sharing the limit and an observer count its work once). A throwing or rejecting observer is
   * reported once (`RL_OBSERVER_ERROR`) and never breaks the work.
   */
  observe(observer: Observer): void {
    this.watchers.observe(this.config.name, observer);
  }

  /** The limit's name in events (the `name` option). */
  get name(): string {
    return this.config.name;
  }

  /** Frees every permit's timer (the permits held are forgotten, not counted failed). */
  close(): void {
    if (this.expiry !== undefined) this.config.timers.clearTimeout(this.expiry);
    this.expiry = undefined;
    this.held.clear();
  }

  /** @see AdaptivePermit.release (called by the permit, once). */
  private readonly ended = (permit: HeldPermit, outcome: PermitOutcome | undefined): void => {
    const failed = outcome?.failed === true;
    const now = this.config.timers.now();
    this.held.delete(permit);
    this.sumHeld(now);
    this.inFlightCount--;
    const counts = this.countsOf(permit.priority);
    counts.inFlight--;
    // A clock that stepped back gives no latency at all, never a negative or a zero one.
    const latency = now >= permit.acquiredAt ? now - permit.acquiredAt : undefined;
    if (failed) {
      counts.failed++;
      if (permit.epoch === this.epoch && this.probe === undefined) this.window.fail(permit.inFlightAtStart);
      this.tell('failed', permit.priority, undefined);
    } else {
      this.tell('released', permit.priority, outcome?.cancelled === true ? undefined : latency);
    }
    if (!failed && outcome?.cancelled !== true && latency !== undefined) this.sampled(permit, latency, now);
    // Work with no latency to give (failed, never ran, or measured on a clock that stepped back): a probe stops waiting for it.
    else if (this.probe?.abandoned(permit) === true) this.endProbe(now);
    this.tick(now);
  };

  private sampled(permit: HeldPermit, latency: number, now: number): void {
    const probe = this.probe;
    if (probe !== undefined) {
      if (probe.succeeded(permit, latency)) this.endProbe(now);
    } else if (permit.epoch === this.epoch)
      this.window.sample(latency, permit.inFlightAtStart, this.heldMs - permit.heldAtStart);
  }

  /** Ends a probe whose time ran out, starts a periodic one, and closes a window that is due. */
  private tick(now: number): void {
    const probe = this.probe;
    if (probe !== undefined) {
      if (now - probe.startedAt >= this.config.maxHoldMs) this.endProbe(now);
      return;
    }
    // Checked once a window (not per permit): whether a probe may start now, and the backend may have slowed down.
    if (now >= this.nextAgeCheckAt) {
      this.nextAgeCheckAt = now + this.config.windowMs;
      // Running work this old is the backend slowing down under it: no need to wait for it to finish to know.
      if (this.mayReprobe(now) && !this.cuts.cutting && this.medianAge(now) > this.baseline! * this.config.reprobeAbove)
        return this.startProbe(now);
    }
    const window = this.window;
    if (now - window.startedAt < this.config.windowMs || !window.measured) return;
    const mayReprobe = this.mayReprobe(now);
    // Old work or a latency far above the baseline while the controller cuts, and the latency falls with the cuts
    // (see CutResponse), is that queue draining.
    const slowedDown = mayReprobe && !this.cuts.cutting;
    const measured = window.close(this.limit, this.baseline!, this.inFlightCount);
    const latency = measured.latencyMs;
    this.lastLatency = latency;
    window.restart(now);
    // Work faster than the baseline is a backend that got faster. Work that ran at `min` or fewer permits ran as a
    // probe's does: that is its unloaded latency now. Work that ran at more may have queued: taken as the baseline,
    // a queue of 1.25 x the new service settles the limit at capacity x 1.25² with the latency at its target, where
    // nothing measures again (a due probe waits for 1.5 x the baseline). Faster by more than a tenth (less is the
    // noise of a few samples), a probe measures it.
    if (latency !== undefined && latency < this.baseline!) {
      if (mayReprobe && measured.peakInFlight > this.config.min && latency <= this.baseline! * FASTER)
        return this.startProbe(now);
      this.baseline = latency;
    }
    const baseline = this.baseline!;
    // Not from the running work: what started at `min` or fewer ran beside the rest, in the queue being measured away.
    if (this.baselineQueued && mayReprobe) return this.startProbe(now, []);
    // A probe costs a round trip at `min`: a due one runs only when the baseline does not explain what is measured.
    if (now >= this.nextProbeAt && (latency === undefined || latency > baseline * EXPLAINED))
      return this.startProbe(now);
    // Latency this far above the baseline is the backend slowing down, not a queue of ours: measure it again.
    if (slowedDown && latency !== undefined && latency > baseline * this.config.reprobeAbove)
      return this.startProbe(now);
    const next = this.config.controller.next(measured);
    if (next >= this.limit) this.cuts.reset();
    else if (latency !== undefined && measured.failures === 0) {
      // Half the work held and the same latency: not a queue of ours but a slower backend (see CutResponse).
      if (this.cuts.unanswered(measured.peakInFlight, latency, this.config.min) && mayReprobe)
        return this.startProbe(now);
    }
    this.judgedAt = now;
    if (measured.peakInFlight > this.peakJudged) this.peakJudged = measured.peakInFlight;
    if (!Number.isFinite(next)) return;
    const before = this.permits;
    this.limit = Math.min(this.config.max, Math.max(this.config.min, next));
    if (this.permits !== before) this.epoch++;
    this.tell('limit', undefined, latency);
  }

  /**
   * Whether a probe may start at `now`: a baseline's time has passed since the last one ended, and the
   * controller has judged any limit a probe left unsized (see {@link unjudgedSince}).
   */
  private mayReprobe(now: number): boolean {
    return this.judgedAt > this.unjudgedSince && now - this.probeEndedAt >= this.baseline!;
  }

  /** Adds the permits held since the last call to {@link heldMs} (a clock that stepped back adds nothing). */
  private sumHeld(now: number): void {
    if (now > this.heldUpTo) this.heldMs += this.inFlightCount * (now - this.heldUpTo);
    this.heldUpTo = now;
  }

  /** The age in ms of the running work in the middle of the acquire order (0 when none runs). */
  private medianAge(now: number): number {
    let index = this.held.size >> 1;
    for (const permit of this.held) if (index-- === 0) return now - permit.acquiredAt;
    return 0;
  }

  /** A probe at `atPermits` from now, counting the work of `running` that started that low (see BaselineProbe). */
  private probeAt(now: number, atPermits: number, running: Iterable<ProbeWork> = this.held): BaselineProbe {
    const samples = this.config.probeSamples;
    // Filled to half since the last probe: the limit met the backend's capacity (or the load's), not a light load.
    const limitFilled = this.peakJudged >= this.permits / 2;
    return new BaselineProbe({ now, atPermits, restoreTo: this.limit, limitFilled, samples, running });
  }

  /** Starts a probe at `min` (see {@link probeAt}; `running`: none when the running work is no unloaded sample). */
  private startProbe(now: number, running: Iterable<ProbeWork> = this.held): void {
    this.probe = this.probeAt(now, this.config.min, running);
    this.cuts.reset();
    this.epoch++;
    this.tell('limit', undefined, undefined);
  }

  private endProbe(now: number): void {
    const probe = this.probe!;
    const before = this.baseline;
    // A probe whose work never came back (its time ran out) keeps the baseline it had.
    const measured = probe.baseline();
    if (measured !== undefined) this.baselineQueued = probe.measuredAt > this.config.min;
    this.baseline = measured ?? before;
    this.probe = undefined;
    if (this.baseline === undefined) {
      // No baseline yet: measure again with the next work.
      this.probe = this.probeAt(now, probe.atPermits);
      return;
    }
    this.limit = probe.restoreTo;
    this.probeEndedAt = now;
    this.peakJudged = 0;
    this.nextProbeAt = now + this.config.probeIntervalMs;
    this.epoch++;
    this.window.restart(now);
    // A baseline that moved (twice or half what it was) is a new backend: the controller starts afresh.
    if (before === undefined || this.baseline > before * 2 || this.baseline < before / 2)
      this.config.controller.rebase?.();
    // A backend that slowed down by `reprobeAbove` or more (not a pause's noise) under a light load (its
    // limit never filled to half: nothing says where its capacity is) starts from the permits the load
    // offered during the probe would hold at the new baseline (Little's law), never below where it was and
    // at most the old limit times the slow-down (retries of shed work inflate what is offered). One round
    // trip there shows how far above the backend's capacity that is, where a slow start from the old limit
    // needs a round trip per doubling. A limit that was filled keeps its level: the backend's capacity in
    // flight is what it met, and a slower service does not raise it. A baseline of 0 (work back within the
    // clock's tick) gives no slow-down to multiply by (0 / 0 made the permits NaN).
    if (
      before !== undefined &&
      before > 0 &&
      !probe.limitFilled &&
      this.baseline >= before * this.config.reprobeAbove
    ) {
      const offered = Math.min(probe.offeredInFlight(this.baseline, now), this.limit * (this.baseline / before));
      this.limit = Math.min(this.config.max, Math.max(this.limit, offered));
      this.unjudgedSince = now;
    }
    // A baseline that fell to half or less: the limit restored was sized for a slower backend.
    if (before !== undefined && this.baseline <= before / 2) this.unjudgedSince = now;
    this.tell('limit', undefined, this.baseline);
  }

  /** Counts as failed every permit held past `maxHold`, then waits for the next one's time. */
  private expire(): void {
    this.expiry = undefined;
    const now = this.config.timers.now();
    for (const permit of this.held) {
      if (now - permit.acquiredAt < this.config.maxHoldMs) break;
      permit.release({ failed: true });
    }
    if (this.held.size > 0) this.scheduleExpiry(now);
  }

  private scheduleExpiry(now: number): void {
    const oldest = this.held.values().next().value as HeldPermit;
    const due = Math.max(1, oldest.acquiredAt + this.config.maxHoldMs - now);
    this.expiry = unrefTimer(this.config.timers.setTimeout(() => this.expire(), due));
  }

  private countsOf(label: string): MutableCounts {
    let counts = this.counts.get(label);
    if (counts === undefined) {
      counts = { inFlight: 0, admitted: 0, shed: 0, failed: 0 };
      this.counts.set(label, counts);
    }
    return counts;
  }

  private tell(
    kind: AdaptiveConcurrencyEvent['kind'],
    priority: string | undefined,
    latencyMs: number | undefined,
  ): void {
    if (!this.watchers.heard) return;
    const { permits, inFlightCount: inFlight, baseline: minLatencyMs } = this;
    this.watchers.tell({ kind, priority, permits, inFlight, minLatencyMs, latencyMs });
  }
}

/**
 * An adaptive concurrency limit (see {@link AdaptiveConcurrency}): `min`, `max` and `initial` permits,
 * the controller, the window, the probes of the baseline, `maxHold`, the classes' shares. Give it as a
 * middleware's `adaptive` option, or call `tryAcquire` around the work yourself:
 *
 * ```ts
 * const db = adaptiveConcurrency({ min: 5, max: 500 });
 * const permit = db.tryAcquire('critical');
 * if (permit === undefined) return overloaded();
 * try { await query(); permit.release(); } catch (e) { permit.release({ failed: true }); throw e; }
 * ```
 */
export function adaptiveConcurrency(options: AdaptiveConcurrencyOptions = {}): AdaptiveConcurrency {
  return new AdaptiveConcurrency(options);
}
