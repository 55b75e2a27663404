import type { Decision } from '../decision.js';
import { createLimiter, type LeaseDecision, type Limiter, type Reservation } from '../limiter/index.js';
import type { Store } from '../store/interface.js';
import type { ExpectedDecision, Scenario, ScenarioStep } from './scenarios.js';

/** The decisions one step produced (empty for reset and release). */
export interface StepResult {
  step: ScenarioStep;
  decisions: Decision[];
}

/** Drops the functions and the policy object so decisions compare as plain data. */
function plain(decision: Decision): Decision {
  const { allowed, limit, remaining, resetMs, retryAfterMs, delayMs, policy, at, reason } = decision;
  return reason === undefined
    ? { allowed, limit, remaining, resetMs, retryAfterMs, delayMs, policy, at }
    : { allowed, limit, remaining, resetMs, retryAfterMs, delayMs, policy, at, reason };
}

/**
 * Runs a scenario against a store with a fake clock set to each step's time. Every limiter of the
 * scenario shares `prefix` (so its later algorithms model a configuration change over the same state).
 * The limiters have no timeout and no deny cache: this exercises the store alone.
 */
export async function runScenario(
  store: Store,
  scenario: Scenario,
  options: { prefix: string },
): Promise<StepResult[]> {
  let now = 0;
  const clock = (): number => now;
  const limiters: Limiter[] = scenario.algorithms.map((algorithm) =>
    createLimiter({ algorithm, store, clock, prefix: options.prefix, timeout: false, denyCache: false }),
  );
  const leases = new Map<string, LeaseDecision>();
  const named = new Map<string, Decision>();
  const reservations = new Map<string, Reservation>();
  const results: StepResult[] = [];
  for (const step of scenario.steps) {
    now = step.at;
    const limiter = limiters[step.algorithm ?? 0]!;
    const key = step.key ?? 'k';
    const op = step.op ?? 'consume';
    const decisions: Decision[] = [];
    for (let i = 0; i < (step.times ?? 1); i++) {
      if (op === 'consume') decisions.push(plain(await limiter.consume(key, step.cost ?? 1)));
      else if (op === 'reserve') {
        const reservation = await limiter.reserve(key, step.cost ?? 1, { maxDelay: step.maxDelay ?? 0 });
        if (step.name !== undefined) reservations.set(step.name, reservation);
        decisions.push(plain(reservation));
      } else if (op === 'cancel') {
        const reservation = reservations.get(step.of ?? '');
        if (reservation === undefined)
          throw new Error(
            `${scenario.name}: no reservation named ${String(step.of)} before the cancel at ${step.at} ms`,
          );
        await reservation.cancel();
      } else if (op === 'peek') decisions.push(plain(await limiter.peek(key, step.cost ?? 0)));
      else if (op === 'reset') await limiter.reset(key);
      else if (op === 'acquire') {
        const lease = await limiter.acquire(key);
        if (step.lease !== undefined && lease.allowed) leases.set(step.lease, lease);
        decisions.push(plain(lease));
      } else if (op === 'release') {
        await leases.get(step.lease ?? '')?.release();
      } else if (op === 'undo') {
        const given = named.get(step.of ?? '');
        if (given === undefined)
          throw new Error(`${scenario.name}: no step named ${String(step.of)} before the undo at ${step.at} ms`);
        await limiter.undo(key, step.cost ?? 1, given);
      }
    }
    const last = decisions[decisions.length - 1];
    if (step.name !== undefined && last !== undefined) named.set(step.name, last);
    results.push({ step, decisions });
  }
  return results;
}

/** Compares a scenario's results with its expectations; returns one line per mismatch (empty when all hold). */
export function checkScenario(results: StepResult[]): string[] {
  const problems: string[] = [];
  results.forEach(({ step, decisions }, index) => {
    const expect = step.expect;
    if (!expect) return;
    const where = `step ${index} (at ${step.at} ms, ${step.op ?? 'consume'}${step.times ? ` ×${step.times}` : ''})`;
    const admitted = decisions.filter((d) => d.allowed);
    if (expect.admitted !== undefined && admitted.length !== expect.admitted) {
      problems.push(`${where}: admitted ${admitted.length}, expected ${expect.admitted}`);
    }
    if (expect.delays !== undefined) {
      const delays = admitted.map((d) => d.delayMs);
      if (JSON.stringify(delays) !== JSON.stringify(expect.delays)) {
        problems.push(`${where}: delays ${JSON.stringify(delays)}, expected ${JSON.stringify(expect.delays)}`);
      }
    }
    if (expect.last !== undefined) {
      const last = decisions[decisions.length - 1];
      if (last === undefined) {
        problems.push(`${where}: no decision to check`);
        return;
      }
      for (const field of Object.keys(expect.last) as (keyof ExpectedDecision)[]) {
        if (last[field] !== expect.last[field]) {
          problems.push(`${where}: ${field} ${String(last[field])}, expected ${String(expect.last[field])}`);
        }
      }
    }
  });
  return problems;
}
