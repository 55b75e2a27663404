import { randomBytes } from 'node:crypto';

let leaseCounter = 0;
const leasePrefix = randomBytes(6).toString('base64url');

/** A lease id unique across processes: a random process prefix and a counter. */
export function newLeaseId(): string {
  leaseCounter = (leaseCounter + 1) % Number.MAX_SAFE_INTEGER;
  return `${leasePrefix}.${leaseCounter.toString(36)}`;
}
