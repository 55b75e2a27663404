import {
  checkCost,
  notAsked,
  rolledBack,
  type Algorithm,
  type Charge,
  type Charged,
  type GiveBack,
  type IdempotentCharge,
  type Settlement,
} from '@rl/core/store';
import type { MemoryStore } from '@rl/store-memory';
import type { HolderConnection } from './transport.js';
import {
  AlgorithmCache,
  decode,
  encode,
  refuse,
  VERBS,
  wireAlgorithm,
  WIRE_VERSION,
  type Answer,
  type Verb,
  type WireError,
} from './wire.js';

/** What a holder has seen: messages answered, calls in them, and messages refused (not rl's, or unreadable). */
export interface HolderCounts {
  messages: number;
  calls: number;
  refused: number;
}

/**
 * Answers the workers' messages from one `MemoryStore`, each message in one synchronous run: every
 * call is one step of the memory store, so a step is atomic per key across all workers, and a
 * request's charges (`chargeAll`) are decided together. Every call is checked before it reaches the
 * store: a bad one is answered with an error (`RL_CLUSTER_WIRE`), never thrown; a message that is not
 * rl's is counted and dropped. Keys reset, banned, unbanned or overridden are told to every worker
 * connected, before the answer of the call that did it.
 */
export class Holder {
  readonly counts: HolderCounts = { messages: 0, calls: 0, refused: 0 };
  private readonly algorithms = new AlgorithmCache();
  private readonly connections = new Set<HolderConnection>();
  /** Held here: the memory store holds its listeners weakly. */
  private readonly onReset = (storageKey: string | undefined): void => {
    const text = encode({ rl: WIRE_VERSION, reset: storageKey ?? null });
    for (const connection of this.connections) connection.send(text);
  };

  constructor(readonly store: MemoryStore) {
    store.watchResets(this.onReset);
  }

  /** Stops telling `connection` of resets (its worker is gone). */
  forget(connection: HolderConnection): void {
    this.connections.delete(connection);
  }

  /** Answers one message of a worker on `connection` (JSON text: see wire.ts). Never throws. */
  handle(connection: HolderConnection, message: unknown): void {
    try {
      this.connections.add(connection);
      const m = decode(message);
      if (m === undefined) {
        this.counts.refused++;
        return;
      }
      const calls = Array.isArray(m.calls) ? (m.calls as unknown[]) : undefined;
      if (calls === undefined) {
        this.counts.refused++;
        return;
      }
      this.counts.messages++;
      const answers: Answer[] = [];
      for (const call of calls) {
        if (!Array.isArray(call) || typeof call[0] !== 'number') {
          this.counts.refused++;
          continue;
        }
        this.counts.calls++;
        const id = call[0];
        try {
          if (m.rl !== WIRE_VERSION)
            refuse('rl', `wire version ${WIRE_VERSION} (this holder's; upgrade the worker and the holder together)`);
          answers.push([id, 1, this.run(call[1], call.slice(2))]);
        } catch (error) {
          answers.push([id, 0, wireError(error)]);
        }
      }
      connection.send(encode({ rl: WIRE_VERSION, to: typeof m.from === 'string' ? m.from : undefined, answers }));
    } catch {
      // An answer that cannot be encoded: the worker's calls time out, the holder stays up.
      this.counts.refused++;
    }
  }

  private run(verb: unknown, args: unknown[]): unknown {
    if (typeof verb !== 'string' || !(VERBS as readonly string[]).includes(verb)) refuse('verb', VERBS.join(', '));
    const store = this.store;
    switch (verb as Verb) {
      case 'charge':
        return store.charge(this.charge(args[0]), now(args[1]));
      case 'chargeAll':
        return this.chargeAll(args[0], args[1]);
      case 'peek': {
        const algorithm = this.algorithm(args[1]);
        return store.peek(key(args[0]), algorithm, checkCost(algorithm, args[2], true), now(args[3]));
      }
      case 'giveBack':
        store.giveBack(this.giveBack(args[0]), now(args[1]));
        return null;
      case 'settle':
        store.settle(key(args[0]), this.algorithm(args[1]), settlement(args[2]), now(args[3]));
        return null;
      case 'ban':
        store.ban(key(args[0]), this.algorithm(args[1]), positive(args[2], 'durationMs'), now(args[3]));
        return null;
      case 'unban':
        store.unban(key(args[0]), this.algorithm(args[1]));
        return null;
      case 'setOverride':
        store.setOverride(key(args[0]), this.algorithm(args[1]), positive(args[2], 'ttlMs'), now(args[3]));
        return null;
      case 'getOverride': {
        const found = store.getOverride(key(args[0]), this.algorithm(args[1]), now(args[2]));
        return found === undefined ? null : { algorithm: wireAlgorithm(found.algorithm), expiresAt: found.expiresAt };
      }
      case 'clearOverride':
        store.clearOverride(key(args[0]), this.algorithm(args[1]));
        return null;
      case 'reset':
        store.reset(key(args[0]), this.algorithm(args[1]));
        return null;
      case 'acquire':
        return store.acquire(key(args[0]), this.leases(args[1]), key(args[2], 'leaseId'), now(args[3]));
      case 'release':
        store.release(key(args[0]), this.leases(args[1]), key(args[2], 'leaseId'));
        return null;
    }
  }

  /**
   * A request's charges in order until an enforced one denies, or would hold the request past
   * `holdMs`: then every admitted one (but replays, which took nothing) is given back at its own time
   * and slot, its id forgotten (a conflict's record is the first request's: kept), and the later
   * ones are not asked. Each answer is `[1, charged]` or `[0, error]`: a charge's error is its own.
   */
  private chargeAll(list: unknown, hold: unknown): unknown[] {
    if (!Array.isArray(list)) refuse('charges', 'an array');
    const holdMs = typeof hold === 'number' && hold >= 0 ? hold : refuse('holdMs', 'a number >= 0');
    const answers: unknown[] = [];
    const admitted: { i: number; charge: Charge; charged: Charged; now: number | undefined }[] = [];
    let stopped = false;
    for (const entry of list as unknown[]) {
      try {
        if (!Array.isArray(entry)) refuse('charges[]', '[charge, now]');
        const charge = this.charge(entry[0]);
        const at = now(entry[1]);
        if (stopped) {
          answers.push([1, notAsked(charge)]);
          continue;
        }
        const charged = this.store.charge(charge, at);
        answers.push([1, charged]);
        const allowed = charged.decision.allowed;
        if (allowed && charged.took === 'charged') admitted.push({ i: answers.length - 1, charge, charged, now: at });
        if (charge.enforced !== false && (!allowed || charged.decision.delayMs > holdMs)) stopped = true;
      } catch (error) {
        answers.push([0, wireError(error)]);
      }
    }
    if (stopped) {
      for (const { i, charge, charged, now: at } of admitted) {
        const { decision, idempotencyId } = charged;
        this.store.giveBack(
          {
            key: charge.key,
            scope: charge.scope,
            local: charge.local,
            algorithm: charge.algorithm,
            cost: charge.cost,
            chargedAt: decision.at,
            delayMs: decision.delayMs,
            idempotencyId,
          } as GiveBack,
          at,
        );
        answers[i] = [1, rolledBack(charged)];
      }
    }
    return answers;
  }

  private algorithm(value: unknown): Algorithm {
    return this.algorithms.algorithm(value, 'algorithm');
  }

  private leases(value: unknown) {
    const algorithm = this.algorithm(value);
    if (algorithm.stateKind !== 'leases') refuse('algorithm', 'a concurrency algorithm');
    return algorithm;
  }

  private charge(value: unknown): Charge {
    const c = record(value, 'charge');
    const algorithm = this.algorithm(c.algorithm);
    const charge: Charge = {
      key: key(c.key),
      scope: optional(c.scope, 'charge.scope', 'string'),
      local: optional(c.local, 'charge.local', 'string'),
      algorithm,
      cost: checkCost(algorithm, c.cost),
      maxDelayMs: optional(c.maxDelayMs, 'charge.maxDelayMs', 'number'),
      idempotency: c.idempotency === undefined || c.idempotency === null ? undefined : idempotency(c.idempotency),
      enforced: optional(c.enforced, 'charge.enforced', 'boolean'),
    };
    if ((charge.scope === undefined) !== (charge.local === undefined))
      refuse('charge.scope', 'given with charge.local');
    return charge;
  }

  private giveBack(value: unknown): GiveBack {
    const b = record(value, 'giveBack');
    const algorithm = this.algorithm(b.algorithm);
    return {
      key: key(b.key),
      scope: optional(b.scope, 'giveBack.scope', 'string'),
      local: optional(b.local, 'giveBack.local', 'string'),
      algorithm,
      cost: checkCost(algorithm, b.cost),
      chargedAt: optional(b.chargedAt, 'giveBack.chargedAt', 'number'),
      delayMs: optional(b.delayMs, 'giveBack.delayMs', 'number'),
      idempotencyId: optional(b.idempotencyId, 'giveBack.idempotencyId', 'string'),
    };
  }
}

/** An idempotent charge's record, each field of its type (the memory store checks no further: the limiter made it). */
function idempotency(value: unknown): IdempotentCharge {
  const i = record(value, 'charge.idempotency');
  key(i.id, 'charge.idempotency.id');
  key(i.fingerprint, 'charge.idempotency.fingerprint');
  for (const field of ['ttlMs', 'maxIds', 'maxReplays'] as const) positive(i[field], `charge.idempotency.${field}`);
  return i as unknown as IdempotentCharge;
}

/** A settlement's record: each number finite, the costs and the bounds not negative. */
function settlement(value: unknown): Settlement {
  const s = record(value, 'settlement');
  for (const field of ['cost', 'actual', 'delayMs', 'maxDebt'] as const)
    if (typeof s[field] !== 'number' || !Number.isFinite(s[field]) || s[field] < 0)
      refuse(`settlement.${field}`, 'a finite number >= 0');
  if (typeof s.chargedAt !== 'number' || !Number.isFinite(s.chargedAt))
    refuse('settlement.chargedAt', 'a finite number');
  return s as unknown as Settlement;
}

function key(value: unknown, field = 'key'): string {
  return typeof value === 'string' && value !== '' ? value : refuse(field, 'a non-empty string');
}

function now(value: unknown): number | undefined {
  if (value === null || value === undefined) return undefined;
  return typeof value === 'number' && Number.isFinite(value) ? value : refuse('now', 'a finite number or null');
}

function positive(value: unknown, field: string): number {
  return typeof value === 'number' && value > 0 && Number.isFinite(value)
    ? value
    : refuse(field, 'a finite number > 0');
}

function record(value: unknown, field: string): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : refuse(field, 'an object');
}

function optional<T extends 'string' | 'number' | 'boolean'>(
  value: unknown,
  field: string,
  type: T,
): (T extends 'string' ? string : T extends 'number' ? number : boolean) | undefined {
  if (value === undefined || value === null) return undefined;
  if (type === 'number' && !Number.isFinite(value)) refuse(field, 'a finite number or absent');
  return typeof value === type ? (value as never) : refuse(field, `a ${type} or absent`);
}

function wireError(error: unknown): WireError {
  const code = (error as { code?: unknown } | null)?.code;
  return {
    code: typeof code === 'string' ? code : 'RL_STORE_ERROR',
    message: error instanceof Error ? error.message : String(error),
  };
}
