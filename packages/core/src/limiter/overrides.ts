import type { Algorithm } from '../algorithm.js';
import { checkOverride } from '../algorithms/override.js';
import type { Duration } from '../duration.js';
import { InvalidOptionError, UnsupportedError } from '../errors.js';
import { checkOptions, spanOption } from '../options.js';
import { warnShortSpan } from '../short-span.js';
import type { StoredOverride } from '../store/interface.js';
import { checkKey } from './call-input.js';
import type { LimiterCore } from './core.js';
import { rateLayouts } from './rate-layouts.js';

/** The options of `limiter.setOverride`. */
export interface OverrideOptions {
  /** How long the override lasts (from 1 ms): required, so that no override outlives what it was set for unnoticed (set it again to extend it). */
  ttl: Duration;
}

/** The body of `limiter.setOverride` (see there): the key, the algorithm and the ttl checked, then the override written in the store. */
export async function writeOverride(
  core: LimiterCore,
  key: string,
  algorithm: Algorithm,
  options: OverrideOptions,
): Promise<void> {
  checkKey(key);
  const store = checkOverrides(core, 'limiter.setOverride');
  const override = checkOverride(algorithm, core.algorithm, 'limiter.setOverride.algorithm');
  if (!(store.capabilities.overrides ?? []).includes(override.kind)) {
    throw new UnsupportedError(
      `This store does not hold overrides of the ${override.kind} kind (limiter.setOverride): its capabilities.overrides lists ${(store.capabilities.overrides ?? []).join(', ') || 'none'}.`,
    );
  }
  if (options === null || typeof options !== 'object')
    throw new InvalidOptionError('limiter.setOverride.options', options, "{ ttl } such as { ttl: '30d' }");
  const o = checkOptions(options, ['ttl'], 'limiter.setOverride.options');
  if (o.ttl === undefined)
    throw new InvalidOptionError(
      'limiter.setOverride.options.ttl',
      undefined,
      "a duration such as '30d' (an override always ends; set it again to extend it)",
    );
  const ttlMs = spanOption(o.ttl, 'limiter.setOverride.options.ttl');
  warnShortSpan(o.ttl, 'limiter.setOverride.options.ttl');
  await core.operate(key, 'override', (storeKey, now) => store.setOverride!(storeKey, override, ttlMs, now));
}

/** The body of `limiter.getOverride` (see there): the live override of the limiter's own kind (without one: of the first kind that has one). */
export async function readOverride(core: LimiterCore, key: string): Promise<StoredOverride | undefined> {
  checkKey(key);
  const store = checkOverrides(core, 'limiter.getOverride');
  for (const layout of layoutsOf(core)) {
    const found = await core.operate(key, 'read the override of', (storeKey, now) =>
      store.getOverride!(storeKey, layout, now),
    );
    if (found !== undefined) return found;
  }
  return undefined;
}

/** The body of `limiter.clearOverride` (see there): in the limiter's own kind (without one: in every kind the store overrides). */
export async function removeOverride(core: LimiterCore, key: string): Promise<void> {
  checkKey(key);
  const store = checkOverrides(core, 'limiter.clearOverride');
  await Promise.all(
    layoutsOf(core).map((layout) =>
      core.operate(key, 'clear the override of', (storeKey) => store.clearOverride!(storeKey, layout)),
    ),
  );
}

/** The limiter's store, or an `UnsupportedError` naming `verb` when the limiter does not check overrides. */
function checkOverrides(core: LimiterCore, verb: string): LimiterCore['store'] {
  if (!core.overrides) {
    throw new UnsupportedError(
      `${verb}() needs a limiter that checks overrides: create it with overrides: true (each decision then reads the key's override in the same store step).`,
    );
  }
  return core.store;
}

/** Where a key's override may be: the limiter's own algorithm, or (calls bring theirs) one algorithm of each kind the store overrides. */
function layoutsOf(core: LimiterCore): readonly Algorithm[] {
  if (core.algorithm !== undefined) return [core.algorithm];
  const kinds = core.store.capabilities.overrides ?? [];
  return rateLayouts().filter((a) => kinds.includes(a.kind));
}
