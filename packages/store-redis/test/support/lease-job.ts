/**
 * What a quota-lease test (leases.test.ts) sends its worker processes (support/lease-worker.ts), what
 * they answer, and what both read: the limiter's prefix and its clock per round.
 */

/** One window per round. */
const WINDOW_MS = 3_600_000;

export interface LeaseJob {
  target: { url: string } | { nodes: { host: string; port: number }[] };
  /** What the worker does with it (see support/lease-worker.ts). */
  mode: 'rounds' | 'hold' | 'spend';
  /** The store's prefix (the limiter's is {@link LIMIT_PREFIX}). */
  prefix: string;
  key: string;
  limit: number;
  units: number;
  rounds: number;
  /** Decisions per round; `spend`: in all, before it stops. */
  perRound: number;
  consumers: number;
  /** The round the clock starts at (a `hold` job and the rounds after it share a window). */
  firstRound: number;
}

export interface LeaseResult {
  /** Admitted per round. */
  admitted: number[];
  /** Decisions not from the store or a block (a timeout, a store error): reported, not expected. */
  failed: number;
}

/** The limiter's prefix, under the store's: a test reads the key's count with the same. */
export const LIMIT_PREFIX = 'leases';

/** The app clock of round `round`: one window per round, 1 ms into it. */
export const roundTime = (round: number): number => round * WINDOW_MS + 1;
