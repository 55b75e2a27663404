import { StoreError, UnsupportedError, type Algorithm, type Charged, type Decision } from '@rl/core/store';
import type { WireError } from './wire.js';

/**
 * Reading a holder's answers on the caller's side: the values of wire.ts's answers made into the
 * store's records again, and the holder's errors into the caller's. `who` names the holder in the
 * errors (`rl cluster holder`, `rl durable object`): an answer that is not of its verb's form is a
 * `StoreError` saying what came.
 */

/** The answer of a verb whose value is null. */
export function none(): undefined {
  return undefined;
}

/** A decision as the holder sent it, with the caller's own policy object when it is the algorithm's. */
export function decision(value: unknown, algorithm: Algorithm, who: string): Decision {
  if (typeof value !== 'object' || value === null || typeof (value as Decision).allowed !== 'boolean')
    throw new StoreError(`${who} answered a decision with ${JSON.stringify(value)}`);
  const d = value as Decision;
  const own = algorithm.policy;
  const policy = d.policy;
  if (policy.name === own.name && policy.quota === own.quota && policy.windowSeconds === own.windowSeconds)
    return { ...d, policy: own };
  return { ...d, policy: Object.freeze(policy) };
}

/** A charge's answer (`Charged`), its decision read by {@link decision}. */
export function charged(value: unknown, algorithm: Algorithm, who: string): Charged {
  const c = value as Charged;
  if (typeof value !== 'object' || value === null || typeof c.took !== 'string')
    throw new StoreError(`${who} answered a charge with ${JSON.stringify(value)}`);
  return { ...c, decision: decision(c.decision, algorithm, who) };
}

/**
 * A `chargeAll`'s answer, one entry per charge (`algorithms[i]` is charge i's): its `Charged`, or the
 * error of that charge. An answer of another length is a `StoreError` (thrown: no charge is read).
 */
export function chargedEach(value: unknown, algorithms: readonly Algorithm[], who: string): (Charged | Error)[] {
  if (!Array.isArray(value) || value.length !== algorithms.length)
    throw new StoreError(`${who} answered a chargeAll of ${algorithms.length} charges with ${String(value)}`);
  return value.map((entry: unknown, i) => {
    const [ok, answer] = Array.isArray(entry) ? entry : [0, { code: 'RL_CLUSTER_WIRE', message: 'no answer' }];
    if (ok !== 1) return holderError(answer as WireError, who);
    try {
      return charged(answer, algorithms[i]!, who);
    } catch (error) {
      return error instanceof Error ? error : new StoreError(String(error));
    }
  });
}

/** The caller's error for a holder's: an unsupported call stays one (the limiter reads it), the rest are store errors. */
export function holderError(error: WireError | undefined, who: string): Error {
  const code = typeof error?.code === 'string' ? error.code : 'RL_STORE_ERROR';
  const message = typeof error?.message === 'string' ? error.message : 'no message';
  if (code === 'RL_UNSUPPORTED') return new UnsupportedError(message);
  return new StoreError(`${who} refused the call (${code}): ${message}`, {
    keyOnly: code !== 'RL_STORE_CLOSED',
  });
}
