import { randomBase64url } from '../runtime.js';
import type { Decision } from '../decision.js';

/** A decision of a concurrency limit; call `release()` exactly when the work ends (extra calls do nothing). */
export interface LeaseDecision extends Decision {
  release(): Promise<void>;
}

/**
 * The ids of one limiter's permits, unique across processes: a random prefix, drawn at the first
 * lease (Cloudflare Workers refuse random values in a module's global scope: they may be drawn only
 * while handling a request), and a counter.
 */
export class LeaseIds {
  private counter = 0;
  private prefix: string | undefined;

  next(): string {
    this.counter = (this.counter + 1) % Number.MAX_SAFE_INTEGER;
    this.prefix ??= randomBase64url(6);
    return `${this.prefix}.${this.counter.toString(36)}`;
  }
}

/** The `release()` of a decision that holds no permit (a denial, a decision of the failure policy). */
export function releaseNothing(): Promise<void> {
  return Promise.resolve();
}
