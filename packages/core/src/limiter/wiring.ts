import type { Decision } from '../decision.js';
import { InvalidOptionError } from '../errors.js';
import type { ChargeAnswer } from './charge-path.js';
import { LimiterCore } from './core.js';
import { coreOf } from './core-registry.js';
import { UNHEARD, type LimiterEvents } from './events.js';
import { ACQUIRE, CHARGE, checkFallback, parseStoreErrorPolicy, type Fallback } from './failure-policy.js';
import { parseLimiterOptions, type LimiterOptions } from './options.js';

/**
 * The core of a limiter built from `options` (checked here, throwing `InvalidOptionError` naming the
 * field): its store, circuits, timeout, deny cache, observers and failure policy, with the fallback's
 * own core when `onStoreError` names one. `field` is where the options were given (`createLimiter`;
 * `createLimiter.onStoreError.fallback` for a fallback's options, one more level per fallback);
 * `ancestors`, the options of every limiter this one stands in for, so that a fallback that refers
 * back to one of them (it would fall back forever) is refused.
 */
export function buildCore(
  options: LimiterOptions,
  field: string,
  events: LimiterEvents,
  ancestors: readonly object[] = [],
): LimiterCore {
  const config = parseLimiterOptions(options, field);
  const policy = parseStoreErrorPolicy(config.onStoreError, `${field}.onStoreError`);
  let fallback: LimiterCore | undefined;
  if (policy.action === 'fallback') {
    const fallbackField = `${field}.onStoreError.fallback`;
    const given = policy.fallback;
    fallback = coreOf(given);
    if (fallback === undefined) {
      const lineage = [...ancestors, options];
      if (lineage.includes(given)) {
        throw new InvalidOptionError(
          fallbackField,
          given,
          'the options of a limiter other than the ones it stands in for (a fallback refers back to itself here: it would fall back forever)',
        );
      }
      fallback = buildCore(given as LimiterOptions, fallbackField, UNHEARD, lineage);
    }
    if (fallback.algorithm === undefined) {
      throw new InvalidOptionError(
        `${fallbackField}.algorithm`,
        undefined,
        'an algorithm of its own: a fallback decides every call with it',
      );
    }
    checkFallback(
      { isConcurrencyLimit: config.algorithm?.stateKind === 'leases', maxCost: config.maxCost },
      fallback,
      given,
      field,
    );
  }
  const core = new LimiterCore(
    config,
    policy.action,
    fallback === undefined ? undefined : { answer: fallbackOf(fallback), synchronous: fallback.synchronous },
    events,
  );
  if (config.observer !== undefined)
    core.observe(config.observer, {
      limit: config.name,
      keys: config.observeKeys,
      dryRun: false,
      field: `${field}.observer`,
    });
  return core;
}

/** How a fallback's core answers the failure policy (see `Fallback`): its own algorithm, its own permits. */
function fallbackOf(core: LimiterCore): Fallback {
  return (op, key, cost) => {
    if (op === ACQUIRE) return core.acquire(key);
    if (op !== CHARGE) return core.peek(key, cost, core.algorithm!);
    const answer = core.charge(core.chargeOf(key, cost, core.algorithm!));
    return answer instanceof Promise ? answer.then(decisionOf) : answer.decision;
  };
}

function decisionOf(answer: ChargeAnswer): Decision {
  return answer.decision;
}
