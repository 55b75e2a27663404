import type { Algorithm } from '../algorithm.js';
import type { Composition } from '../compose/engine.js';
import { Run } from '../compose/run.js';
import { InvalidAlgorithmError, InvalidKeyError, InvalidOptionError } from '../errors.js';
import { idempotentCharge } from '../limiter/idempotency.js';
import type { LimiterCore } from '../limiter/core.js';
import { checkLimiterCost } from '../limiter/index.js';
import { MAX_COUNT } from '../options.js';
import type { MaybePromise } from '../store/interface.js';
import type {
  AlgorithmFunction,
  CostFunction,
  DenyFunction,
  FingerprintFunction,
  IdempotencyKeyFunction,
  KeyFunction,
  LimitConfig,
  SkipFunction,
} from './option-types.js';
import { refusal } from './refusal.js';
import type { RateLimitResult } from './result.js';

/** How one limit's key and cost are found for a request, fixed at creation. */
interface Resolution<Req> {
  /** The fixed algorithm; undefined when {@link algorithmOf} chooses it per request. */
  readonly algorithm: Algorithm | undefined;
  /** The function choosing the algorithm per request, or undefined. */
  readonly algorithmOf: AlgorithmFunction<Req> | undefined;
  /** The limit's limiter core, which checks a chosen algorithm. */
  readonly core: LimiterCore;
  /** The largest cost a cost function may return for this limit (its `maxCost`, else the capacity; a chosen algorithm's capacity bounds it too). */
  readonly maxCost: number;
  /** Where that `maxCost` is set, named by a cost above it. */
  readonly maxCostField: string;
  /** The key function (the limit's own, or the middleware's). */
  readonly key: KeyFunction<Req>;
  /** An earlier limit with the same key function (its key is reused), or -1 to call `key`. */
  readonly keyFrom: number;
  /** The cost function, or undefined when the cost is the constant {@link cost}. */
  readonly costOf: CostFunction<Req> | undefined;
  /** The constant cost, checked against the algorithm at creation (when `costOf` is undefined; against a chosen algorithm per request). */
  readonly cost: number;
  /** An earlier limit with the same cost function (its answer is reused, then checked for this limit), or -1 to call `costOf`. */
  readonly costFrom: number;
  /** The idempotency key function, or undefined for none. */
  readonly idempotencyKey: IdempotencyKeyFunction<Req> | undefined;
  /** The fingerprint function; undefined: the method, the path and the cost. */
  readonly fingerprint: FingerprintFunction<Req> | undefined;
  /** Where an idempotency key's errors are named. */
  readonly field: string;
}

/** What the evaluation reads of a request besides its limits: the middleware's key, and its request line for the default fingerprint. */
export interface RequestParts<Req> {
  readonly key: KeyFunction<Req>;
  /** The middleware's `deny`, or undefined. */
  readonly deny?: DenyFunction<Req> | undefined;
  /** `METHOD /path` (without the query), for the default fingerprint of a retry; undefined: none. */
  readonly line: ((req: Req) => string) | undefined;
  /** The middleware's `skip`, or undefined. */
  readonly skip?: SkipFunction<Req> | undefined;
}

/** The steps of resolving one limit for a request, in order. */
const KEY = 0;
const ALGORITHM = 1;
const COST = 2;
type Step = typeof KEY | typeof ALGORITHM | typeof COST;

/**
 * The boundary between a request and the composition engine: runs `skip`, then resolves each
 * limit's key, algorithm (for a limit that chooses it per request) and cost once (a function shared by
 * several limits is called once per request) and checks them (a non-empty string; a rate algorithm
 * the store runs, a shaping one only with `wait`; a cost that a function returned, against each
 * limit's `maxCost`, else its capacity; a constant cost was checked at creation, or is checked
 * against the chosen algorithm), in the order of the limits, key before algorithm before cost. Only
 * then does the engine charge anything: a bad key, algorithm or cost charges no limit.
 *
 * Functions that return plain values are not awaited: with limiters that answer synchronously, the
 * whole evaluation is synchronous.
 */
export class Evaluation<Req> {
  private readonly resolutions: readonly Resolution<Req>[];
  /** True when some limit chooses its algorithm per request: each request then carries its algorithms. */
  private readonly perRequest: boolean;

  /** True when some limit takes an idempotency key: each request then carries its idempotent charges. */
  private readonly idempotent: boolean;
  private readonly line: ((req: Req) => string) | undefined;
  private readonly deny: DenyFunction<Req> | undefined;

  private readonly skip: SkipFunction<Req> | undefined;
  /** The longest hold (`wait.maxDelay`), 0 without `wait` (a chosen shaping algorithm is then refused). */
  private readonly maxDelayMs: number;

  /** The limits' requests resolved as `request` says, charged through `composition`, each held at most `maxDelayMs` (see {@link maxDelayMs}). */
  constructor(
    limits: readonly LimitConfig<Req>[],
    request: RequestParts<Req>,
    private readonly composition: Composition<RateLimitResult>,
    maxDelayMs: number,
  ) {
    this.skip = request.skip;
    this.maxDelayMs = maxDelayMs;
    const firstSharedKey = limits.findIndex((l) => l.key === undefined);
    const firstSharedCost = limits.findIndex((l) => l.sharedCost);
    this.perRequest = limits.some((l) => l.algorithmOf !== undefined);
    this.idempotent = limits.some((l) => l.idempotencyKey !== undefined);
    this.line = request.line;
    this.deny = request.deny;
    const sharedKey = request.key;
    this.resolutions = limits.map((l, i) => ({
      algorithm: l.algorithm,
      algorithmOf: l.algorithmOf,
      core: composition.cores[i]!,
      maxCost: l.maxCost ?? l.algorithm?.maxCost ?? MAX_COUNT,
      maxCostField: l.maxCostField,
      key: l.key ?? sharedKey,
      keyFrom: l.key === undefined && firstSharedKey < i ? firstSharedKey : -1,
      costOf: typeof l.cost === 'number' ? undefined : l.cost,
      cost: typeof l.cost === 'number' ? l.cost : 0,
      costFrom: l.sharedCost && firstSharedCost < i ? firstSharedCost : -1,
      idempotencyKey: l.idempotencyKey,
      fingerprint: l.idempotencyFingerprint,
      field: limits.length > 1 ? `limits[${i}].idempotencyKey` : 'idempotencyKey',
    }));
  }

  /**
   * The result for `req`, or `undefined` when `skip` says so: directly when every function and
   * limiter answered synchronously, otherwise a promise. A bad key or cost, or a function that
   * throws, throws on the direct path and rejects otherwise; either way no limit was charged.
   */
  readonly decide = (req: Req): MaybePromise<RateLimitResult | undefined> => {
    const skip = this.skip;
    if (skip !== undefined) {
      const skipped = skip(req);
      if (typeof skipped !== 'boolean') return this.afterSkip(req, skipped);
      if (skipped) return undefined;
    }
    return this.charge(req);
  };

  private async afterSkip(req: Req, skipped: Promise<boolean>): Promise<RateLimitResult | undefined> {
    if (await skipped) return undefined;
    return this.charge(req);
  }

  private charge(req: Req): MaybePromise<RateLimitResult> {
    const run = new Run(this.resolutions.length, this.perRequest, this.idempotent);
    const pending = this.resolve(req, run, 0, KEY);
    if (this.deny !== undefined)
      return pending === undefined ? this.denyOrRun(req, run) : pending.then(() => this.denyOrRun(req, run));
    if (pending !== undefined) return pending.then(() => this.composition.run(run));
    return this.composition.run(run);
  }

  /** `run` (resolved) through the limits, unless `deny` says to refuse it: then denied by none of them (see `refusal`). */
  private denyOrRun(req: Req, run: Run): MaybePromise<RateLimitResult> {
    const verdict = this.deny!(req);
    const decide = (answer: unknown): MaybePromise<RateLimitResult> => {
      const refused = refusal(answer, run, this.resolutions);
      return refused === 0 ? this.composition.run(run) : this.composition.refuse(run, refused);
    };
    return verdict instanceof Promise ? verdict.then(decide) : decide(verdict);
  }

  /**
   * Fills in the keys, algorithms (only when some limit chooses its algorithm per request) and costs
   * of limits `from..` of `run`, in order, starting at step `step` of limit `from` (the steps before
   * it are done): returns undefined when done synchronously, or a promise of the rest once a function
   * answered with one.
   */
  private resolve(req: Req, run: Run, from: number, step: Step): Promise<void> | undefined {
    const resolutions = this.resolutions;
    const { keys, costs, algorithms } = run;
    for (let i = from; i < resolutions.length; i++, step = KEY) {
      const r = resolutions[i]!;
      if (step === KEY) {
        const key: unknown = r.keyFrom === -1 ? r.key(req) : keys[r.keyFrom];
        if (typeof key !== 'string') return this.awaitStep(req, run, i, KEY, key);
        if (key.length === 0) throw new InvalidKeyError(key);
        keys[i] = key;
        step = ALGORITHM;
      }
      if (step === ALGORITHM) {
        if (r.algorithmOf !== undefined) {
          const chosen: unknown = r.algorithmOf(req);
          if (chosen instanceof Promise) return this.awaitStep(req, run, i, ALGORITHM, chosen);
          algorithms![i] = this.checkAlgorithm(r, chosen);
        }
        step = COST;
      }
      const costOf = r.costOf;
      if (costOf === undefined) {
        costs[i] = r.algorithmOf === undefined ? r.cost : checkLimiterCost(r, r.cost, algorithms![i]!);
      } else {
        const cost: unknown = r.costFrom === -1 ? costOf(req) : costs[r.costFrom];
        if (typeof cost !== 'number') return this.awaitStep(req, run, i, COST, cost);
        costs[i] = checkLimiterCost(r, cost, r.algorithm ?? algorithms![i]!);
      }
      if (r.idempotencyKey !== undefined) this.idempotency(req, run, i, r);
    }
    return undefined;
  }

  /** Limit `i`'s idempotent charge for `req` (its cost known), when its key function gives a key: an `InvalidOptionError` for a bad key or fingerprint. */
  private idempotency(req: Req, run: Run, i: number, r: Resolution<Req>): void {
    const id = r.idempotencyKey!(req);
    if (id === undefined) return;
    const fingerprint: unknown =
      r.fingerprint === undefined ? `${this.line?.(req) ?? ''} cost ${run.costs[i]!}` : r.fingerprint(req);
    if (typeof fingerprint !== 'string')
      throw new InvalidOptionError(r.field.replace('Key', 'Fingerprint'), fingerprint, 'a string');
    run.idempotency![i] = idempotentCharge(id, fingerprint, r.core.idempotency, r.field);
  }

  /**
   * Step `step` of limit `i` answered with a promise (or, for a key or cost, something other than a
   * string or number): settles it, checks it, and resolves the rest. The steps after it are run only
   * once it is known to be good.
   */
  private async awaitStep(req: Req, run: Run, i: number, step: Step, pending: unknown): Promise<void> {
    const value: unknown = await pending;
    const r = this.resolutions[i]!;
    if (step === KEY) {
      if (typeof value !== 'string' || value.length === 0) throw new InvalidKeyError(value);
      run.keys[i] = value;
      await this.resolve(req, run, i, ALGORITHM);
    } else if (step === ALGORITHM) {
      run.algorithms![i] = this.checkAlgorithm(r, value);
      await this.resolve(req, run, i, COST);
    } else {
      run.costs[i] = checkLimiterCost(r, value, r.algorithm ?? run.algorithms![i]!);
      if (r.idempotencyKey !== undefined) this.idempotency(req, run, i, r);
      await this.resolve(req, run, i + 1, KEY);
    }
  }

  /** An algorithm a limit's function chose, checked by its limiter (a rate algorithm its store runs), and a shaping one only with `wait`. */
  private checkAlgorithm(r: Resolution<Req>, value: unknown): Algorithm {
    const algorithm = r.core.checkCallAlgorithm(value);
    if (algorithm.mayDelay && this.maxDelayMs === 0) {
      throw new InvalidAlgorithmError(
        value,
        "a shaping leaky bucket (mode: 'shape') holds requests: give the middleware wait: { maxDelay }",
      );
    }
    return algorithm;
  }
}
