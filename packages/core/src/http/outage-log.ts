import type { CircuitChange, Limiter, StoreErrorEvent } from '../limiter/index.js';

/** Where a middleware logs its store outages: the framework's logger (Fastify's), else the console. */
export interface OutageLogger {
  warn(details: Record<string, unknown>, message: string): void;
  info(details: Record<string, unknown>, message: string): void;
}

/** The console, for frameworks without a logger of their own (Express, Koa). */
export const consoleLogger: OutageLogger = {
  warn: (_details, message) => console.warn(message),
  info: (_details, message) => console.info(message),
};

/** An outage is over when its limit's store has not failed for this long (or its circuit closed). */
export const OUTAGE_QUIET_MS = 30_000;

/**
 * Logs a store outage once, not once per request: the first failure of a limit's store is logged
 * (`warn`) with the error and what the failure policy does meanwhile; further failures are not, until
 * the outage is over: the circuit closed again (logged at `info`), or `OUTAGE_QUIET_MS` passed
 * without a failure. Wall-clock time (`Date.now`): it only spaces log lines.
 */
export class OutageLog {
  /** Per limit in an outage: the time of its latest failure. */
  private readonly lastFailure = new Map<Limiter, number>();

  constructor(
    limits: readonly { readonly limiter: Limiter; readonly name: string }[],
    private readonly logger: OutageLogger,
    private readonly now: () => number = Date.now,
  ) {
    for (const { limiter, name } of limits) {
      limiter.on('storeError', (event: StoreErrorEvent) => this.failed(limiter, name, event));
      limiter.on('circuit', (event: CircuitChange) => {
        if (event.state === 'closed') this.recovered(limiter, name, event);
      });
    }
  }

  private failed(limiter: Limiter, name: string, event: StoreErrorEvent): void {
    const now = this.now();
    const last = this.lastFailure.get(limiter);
    this.lastFailure.set(limiter, now);
    if (last !== undefined && now - last < OUTAGE_QUIET_MS) return;
    const policy =
      event.action === 'deny'
        ? 'denied (503)'
        : event.action === 'allow'
          ? 'admitted'
          : 'decided by the fallback limit';
    this.logger.warn(
      { limit: name, reason: event.reason, action: event.action, err: event.error },
      `rl: the store of limit "${name}" failed (${event.reason}: ${event.error.message}); requests are ${policy} while it fails. Logged once per outage.`,
    );
  }

  private recovered(limiter: Limiter, name: string, event: CircuitChange): void {
    if (!this.lastFailure.delete(limiter)) return;
    this.logger.info({ limit: name, domain: event.domain }, `rl: the store of limit "${name}" answers again.`);
  }
}
