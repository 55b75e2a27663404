import { randomBase64url } from '../runtime.js';
import type { Decision } from '../decision.js';

/** A decision of a concurrency limit; call `release()` exactly when the work ends (extra calls do nothing). */
export interface LeaseDecision extends Decision {
  release(): Promise<void>;
}

let leaseCounter = 0;
/**
 * The random prefix of this process's lease ids, drawn at the first lease: Cloudflare Workers refuse
 * random values in a module's global scope (they may be drawn only while handling a request).
 */
let leasePrefix: string | undefined;

/** A lease id unique across processes: a random process prefix and a counter. */
export function newLeaseId(): string {
  leaseCounter = (leaseCounter + 1) % Number.MAX_SAFE_INTEGER;
  leasePrefix ??= randomBase64url(6);
  return `${leasePrefix}.${leaseCounter.toString(36)}`;
}

/** The `release()` of a decision that holds no permit (a denial, a decision of the failure policy). */
export function releaseNothing(): Promise<void> {
  return Promise.resolve();
}
