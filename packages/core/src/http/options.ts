import { checkAlgorithm, checkCost, type Algorithm } from '../algorithm.js';
import { parseTimerDuration } from '../duration.js';
import { warnDefaultPrefix } from '../default-prefix.js';
import { InvalidOptionError } from '../errors.js';
import {
  checkMaxCost,
  checkStore,
  parseLimitName,
  parseMaxDelay,
  type LeaseOptions,
  type StoreErrorPolicy,
} from '../limiter/index.js';
import { parseStoreErrorPolicy } from '../limiter/failure-policy.js';
import { parseLeaseOptions } from '../limiter/lease-options.js';
import { checkMaxDebt } from '../limiter/settlement.js';
import { checkObserver } from '../observe/observation.js';
import type { Observer } from '../observe/observer.js';
import { refuseOptionsMistake, refuseUncalledFactory } from '../option-mistakes.js';
import { checkOptions, optionalBoolean, positiveNumber, refuseOnConcurrency } from '../options.js';
import { HTTP_PEER_OPTIONS } from '../peer-option-hints.js';
import type { Store } from '../store/interface.js';
import { checkTimers, systemTimers } from '../timers.js';
import { parseHeaderFormat } from './headers.js';
import { parseIPv6Subnet } from './keys.js';
import {
  PASSED_LIMITER_OPTIONS,
  type AlgorithmFunction,
  type Cost,
  type CostFunction,
  type HttpConfig,
  type HttpRateLimitOptions,
  type ActualCostFunction,
  type FingerprintFunction,
  type IdempotencyKeyFunction,
  type KeyFunction,
  type LimitConfig,
  type SkipFunction,
  type DenyFunction,
} from './option-types.js';
import { adaptiveOptions } from './adaptive-admission.js';

const CORE_OPTIONS = [
  'algorithm',
  'limits',
  'store',
  'prefix',
  'key',
  'cost',
  'maxCost',
  'skip',
  'deny',
  'headers',
  'wait',
  'ipv6Subnet',
  'timers',
  'skipSuccessfulRequests',
  'skipFailedRequests',
  'dryRun',
  'observer',
  'observeKeys',
  'logStoreErrors',
  'lease',
  'actualCost',
  'idempotencyKey',
  'idempotencyFingerprint',
  'adaptive',
  'priority',
  ...PASSED_LIMITER_OPTIONS,
] as const;
const LIMIT_OPTIONS = [
  'algorithm',
  'name',
  'key',
  'cost',
  'maxCost',
  'store',
  'onStoreError',
  'dryRun',
  'lease',
  'actualCost',
  'maxDebt',
  'idempotencyKey',
  'idempotencyFingerprint',
] as const;
/** The storage name of a limit whose algorithm is chosen per request, when it has no name of its own. */
const PER_REQUEST_NAME = 'per-request';

/**
 * Throws {@link InvalidOptionError} when `options` is not an object or names an option that neither
 * the http layer nor the adapter (`adapterOptions`) knows. For adapters that validate options whose
 * limits are only complete later (Fastify's `global: false` plugin options, completed per route).
 */
export function checkOptionNames(
  options: unknown,
  owner: string,
  adapterOptions: readonly string[],
): Record<string, unknown> {
  refuseOptionsMistake(options, owner);
  return checkOptions(options, [...CORE_OPTIONS, ...adapterOptions], owner, HTTP_PEER_OPTIONS);
}

/**
 * Parses the options of one middleware; throws {@link InvalidOptionError} naming the field. One rule
 * for every option, a limit's too: `undefined` is "not given"; `null` is a bad value like any other.
 */
export function parseHttpOptions<Req>(
  options: HttpRateLimitOptions<Req, never>,
  owner: string,
  adapterOptions: readonly string[],
): HttpConfig<Req> {
  const o = checkOptionNames(options, owner, adapterOptions);
  // Checked by createLimiter, which must never see a null as "not given".
  for (const name of PASSED_LIMITER_OPTIONS) if (o[name] === null) throw nullOption(`${owner}.${name}`);
  // An `adaptive` limit alone is a middleware too: no rate limit, a permit per request.
  const adaptiveOnly = o.algorithm === undefined && o.limits === undefined && o.adaptive !== undefined;
  if (!adaptiveOnly && (o.algorithm === undefined) === (o.limits === undefined)) {
    throw new InvalidOptionError(
      `${owner}.algorithm`,
      o.algorithm,
      'exactly one of algorithm (one limit) or limits (several), for example algorithm: tokenBucket({ capacity: 20, refillRate: 10 }); or an adaptive limit alone (adaptive: adaptiveConcurrency({ min, max }))',
    );
  }
  const several = o.limits !== undefined;
  const limitOptions: Record<string, unknown>[] = [];
  if (adaptiveOnly) {
    // No rate limit to parse.
  } else if (!several) {
    refuseUncalledFactory(o.algorithm, `${owner}.algorithm`);
    if (typeof o.algorithm !== 'function') checkAlgorithm(o.algorithm, `${owner}.algorithm`);
    limitOptions.push({ algorithm: o.algorithm });
  } else {
    if (!Array.isArray(o.limits) || o.limits.length === 0) {
      throw new InvalidOptionError(
        `${owner}.limits`,
        o.limits,
        'a non-empty array of { algorithm, name?, key?, cost?, store?, onStoreError? }',
      );
    }
    o.limits.forEach((limit: unknown, i: number) => {
      const l = checkOptions(limit, LIMIT_OPTIONS, `${owner}.limits[${i}]`, HTTP_PEER_OPTIONS);
      refuseUncalledFactory(l.algorithm, `${owner}.limits[${i}].algorithm`);
      if (typeof l.algorithm !== 'function') checkAlgorithm(l.algorithm, `${owner}.limits[${i}].algorithm`);
      limitOptions.push(l);
    });
  }

  const key = optionalFunction<KeyFunction<Req>>(o.key, `${owner}.key`);
  const skip = optionalFunction<SkipFunction<Req>>(o.skip, `${owner}.skip`);
  const deny = optionalFunction<DenyFunction<Req>>(o.deny, `${owner}.deny`);
  const cost = o.cost === undefined ? 1 : parseCost<Req>(o.cost, `${owner}.cost`);
  const ipv6Subnet = parseIPv6Subnet(o.ipv6Subnet, `${owner}.ipv6Subnet`);
  const timers = o.timers === undefined ? systemTimers : checkTimers(o.timers, `${owner}.timers`);
  const headers = parseHeaderFormat(o.headers, `${owner}.headers`);
  if (o.prefix !== undefined && (typeof o.prefix !== 'string' || o.prefix.length === 0)) {
    throw new InvalidOptionError(`${owner}.prefix`, o.prefix, 'a non-empty string');
  }
  const store = optionalStore(o.store, `${owner}.store`);
  const dryRun = optionalBoolean(o.dryRun, `${owner}.dryRun`, false);
  if (o.observer !== undefined) checkObserver(o.observer, `${owner}.observer`);
  const skipSuccessful = optionalBoolean(o.skipSuccessfulRequests, `${owner}.skipSuccessfulRequests`, false);
  const skipFailed = optionalBoolean(o.skipFailedRequests, `${owner}.skipFailedRequests`, false);

  const names: string[] = [];
  const limits = limitOptions.map((l, i): LimitConfig<Req> => {
    const field = several ? `${owner}.limits[${i}]` : owner;
    const algorithmOf = typeof l.algorithm === 'function' ? (l.algorithm as AlgorithmFunction<Req>) : undefined;
    const algorithm = algorithmOf === undefined ? (l.algorithm as Algorithm) : undefined;
    const nameField = several ? `${field}.name` : `${owner}.algorithm`;
    const name = parseLimitName(l.name, algorithm?.policy.name ?? PER_REQUEST_NAME, nameField);
    if (names.includes(name))
      throw new InvalidOptionError(
        nameField,
        name,
        `a name unique within this middleware (two limits are named "${name}"; give each a name)`,
      );
    names.push(name);
    const limitDryRun = l.dryRun === undefined ? dryRun : optionalBoolean(l.dryRun, `${field}.dryRun`, false);
    return Object.freeze({
      ...parseLimit<Req>(
        l,
        { algorithm, name, field },
        {
          ...{
            cost,
            maxCost: o.maxCost,
            lease: o.lease,
            actualCost: optionalFunction<ActualCostFunction<Req>>(o.actualCost, `${owner}.actualCost`),
          },
          idempotencyKey: optionalFunction<IdempotencyKeyFunction<Req>>(o.idempotencyKey, `${owner}.idempotencyKey`),
          idempotencyFingerprint: optionalFunction<FingerprintFunction<Req>>(
            o.idempotencyFingerprint,
            `${owner}.idempotencyFingerprint`,
          ),
        },
        owner,
      ),
      algorithmOf,
      // Unnamed, a limit whose policy is each decision's (chosen per request, or a key's override) is shown by that policy's name.
      headerName: l.name === undefined && (algorithm === undefined || o.overrides === true) ? undefined : name,
      dryRun: limitDryRun,
    });
  });

  let maxDelayMs = 0;
  const shapes = limits.some((l) => l.algorithm?.mayDelay === true);
  if (o.wait === undefined) {
    if (shapes)
      throw new InvalidOptionError(
        `${owner}.wait`,
        undefined,
        "{ maxDelay } with a shaping leaky bucket (mode: 'shape'): the longest a request may be held",
      );
  } else {
    // With wait, every rate limit reserves (limiter.reserve) instead of consuming: a request waits
    // for the latest of its slots, at most maxDelay, and is denied at once when it cannot get one.
    if (limits.every((l) => l.leases))
      throw new InvalidOptionError(
        `${owner}.wait`,
        o.wait,
        'no wait: it applies to rate limits (a request waits for its reservations), and every limit here is a concurrency limit',
      );
    if (limits.some((l) => l.lease !== undefined))
      throw new InvalidOptionError(
        `${owner}.wait`,
        o.wait,
        'no wait with lease: a reservation takes its slot in the store, a lease spends units taken before',
      );
    const w = checkOptions(o.wait, ['maxDelay'], `${owner}.wait`);
    maxDelayMs = parseTimerDuration(w.maxDelay, `${owner}.wait.maxDelay`);
    // Within every fixed algorithm's horizon (a chosen algorithm reserves within the smaller of the two).
    for (const l of limits)
      if (l.algorithm !== undefined && !l.leases) parseMaxDelay(maxDelayMs, l.algorithm, `${owner}.wait.maxDelay`);
  }

  // The default namespace (see HttpRateLimiter) is the same in every app with the same limits: on a shared store, say so.
  if (o.prefix === undefined)
    for (const l of limits) warnDefaultPrefix(l.store ?? store, owner, `rl:${names.join('+')}`);
  const limiterOptions: Record<string, unknown> = {};
  for (const name of PASSED_LIMITER_OPTIONS) if (o[name] !== undefined) limiterOptions[name] = o[name];
  return Object.freeze({
    owner,
    limits: Object.freeze(limits),
    key,
    skip,
    deny,
    headers,
    maxDelayMs,
    skipSuccessful,
    skipFailed,
    observer: o.observer as Observer | undefined,
    observeKeys: optionalBoolean(o.observeKeys, `${owner}.observeKeys`, false),
    logStoreErrors: optionalBoolean(o.logStoreErrors, `${owner}.logStoreErrors`, true),
    prefix: o.prefix as string | undefined,
    store,
    ipv6Subnet,
    timers,
    ...adaptiveOptions<Req>(o.adaptive, o.priority, owner),
    limiterOptions: Object.freeze(limiterOptions),
  });
}

/** One limit's identity, as parsed: its fixed algorithm (undefined: chosen per request), its name, and the field its options were given as. */
interface LimitIdentity {
  readonly algorithm: Algorithm | undefined;
  readonly name: string;
  readonly field: string;
}

/** What a limit takes from the middleware when it says nothing of its own. */
interface SharedLimitOptions<Req> {
  readonly cost: Cost<Req>;
  readonly maxCost: unknown;
  /** The middleware's `lease`: every rate limit's unless it gives its own. */
  readonly lease: unknown;
  /** The middleware's `actualCost`: the real cost of every rate limit that takes the middleware's `cost`. */
  readonly actualCost: ActualCostFunction<Req> | undefined;
  /** The middleware's idempotency key and fingerprint: every rate limit's unless it gives its own. */
  readonly idempotencyKey: IdempotencyKeyFunction<Req> | undefined;
  readonly idempotencyFingerprint: FingerprintFunction<Req> | undefined;
}

/**
 * One limit's own options (key, cost, store, policy), its cost checked against its algorithm when
 * constant (`algorithm` undefined: chosen per request, and its cost checked per request). `maxCost`,
 * `store` and the limit's name are checked by the limiter's own rules, naming this limit's fields.
 */
function parseLimit<Req>(
  l: Record<string, unknown>,
  { algorithm, name, field }: LimitIdentity,
  shared: SharedLimitOptions<Req>,
  owner: string,
): Omit<LimitConfig<Req>, 'algorithmOf' | 'headerName' | 'dryRun'> {
  const leases = algorithm?.stateKind === 'leases';
  const key = optionalFunction<KeyFunction<Req>>(l.key, `${field}.key`);
  let cost: Cost<Req> | undefined;
  if (l.cost !== undefined) {
    refuseOnConcurrency(
      algorithm,
      `${field}.cost`,
      l.cost,
      'no cost on a concurrency limit: a request holds one permit',
    );
    cost = parseCost<Req>(l.cost, `${field}.cost`);
  }
  if (l.onStoreError === null) throw nullOption(`${field}.onStoreError`);
  // Checked here to name the limit's own field; the limiter checks them again, under the middleware's name.
  if (l.onStoreError !== undefined) parseStoreErrorPolicy(l.onStoreError, `${field}.onStoreError`);
  if (l.maxDebt !== undefined) checkMaxDebt(l.maxDebt, `${field}.maxDebt`);
  const effective = leases ? 1 : (cost ?? shared.cost);
  // A constant cost is checked here, once: requests then charge it unchecked (a per-request algorithm's capacity, per request).
  if (!leases && typeof effective === 'number' && algorithm !== undefined) checkCost(algorithm, effective);
  const maxCostField = l.maxCost !== undefined ? `${field}.maxCost` : `${owner}.maxCost`;
  const given = l.maxCost !== undefined ? l.maxCost : shared.maxCost;
  const declared = leases || given === undefined ? undefined : checkMaxCost(given, algorithm, maxCostField);
  // Checked here to name the field it was given in; the limiter checks it again with its lockout.
  const leaseField = l.lease !== undefined ? `${field}.lease` : `${owner}.lease`;
  const lease = l.lease ?? (leases ? undefined : shared.lease);
  parseLeaseOptions(lease, algorithm, false, leaseField);
  if (declared !== undefined && typeof effective === 'number' && effective > declared) {
    throw new InvalidOptionError(maxCostField, declared, `at least the constant cost ${effective} it bounds`);
  }
  const ownActualCost = rateLimitFunction<ActualCostFunction<Req>>(
    l,
    'actualCost',
    { algorithm, field },
    'a request holds one permit',
  );
  const ownIdempotencyKey = rateLimitFunction<IdempotencyKeyFunction<Req>>(
    l,
    'idempotencyKey',
    { algorithm, field },
    'a permit is held, not charged',
  );
  return {
    algorithm,
    name,
    leases,
    key,
    cost: effective,
    sharedCost: !leases && cost === undefined,
    maxCost: typeof effective === 'number' ? effective : declared,
    maxCostField,
    store: optionalStore(l.store, `${field}.store`),
    onStoreError: l.onStoreError as StoreErrorPolicy | undefined,
    lease: lease as LeaseOptions | undefined,
    actualCost: ownActualCost ?? (leases || cost !== undefined ? undefined : shared.actualCost),
    maxDebt: l.maxDebt,
    idempotencyKey: ownIdempotencyKey ?? (leases ? undefined : shared.idempotencyKey),
    idempotencyFingerprint:
      optionalFunction<FingerprintFunction<Req>>(l.idempotencyFingerprint, `${field}.idempotencyFingerprint`) ??
      shared.idempotencyFingerprint,
  };
}

/** A `store` option: undefined (the default), or a store by the limiter's rule. */
function optionalStore(value: unknown, field: string): Store | undefined {
  return value === undefined ? undefined : checkStore(value, field);
}

/** The error for an option given as null: leaving it out (undefined) is how to take its default. */
function nullOption(field: string): InvalidOptionError {
  return new InvalidOptionError(field, null, 'a value: null is not "not given" (leave the option out for its default)');
}

/** The one check of a `cost` option: a positive number, or a function of the request (its answers are checked per request). */
function parseCost<Req>(value: unknown, field: string): Cost<Req> {
  return typeof value === 'function' ? (value as CostFunction<Req>) : positiveNumber(value, field);
}

/**
 * A limit's own function option `name` (`l[name]`, checked at `<field>.<name>`), which a concurrency
 * limit refuses: `permit` says what a request does with its permit instead.
 */
function rateLimitFunction<F>(
  l: Record<string, unknown>,
  name: 'actualCost' | 'idempotencyKey',
  { algorithm, field }: Omit<LimitIdentity, 'name'>,
  permit: string,
): F | undefined {
  const own = optionalFunction<F>(l[name], `${field}.${name}`);
  if (own !== undefined)
    refuseOnConcurrency(algorithm, `${field}.${name}`, l[name], `no ${name} on a concurrency limit: ${permit}`);
  return own;
}

function optionalFunction<F>(value: unknown, field: string): F | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') throw new InvalidOptionError(field, value, 'a function of the request');
  return value as F;
}
