import { describe, expect, it } from 'vitest';
import type { Algorithm } from '../algorithm.js';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { combineLimiters } from './group.js';
import type { Decision } from '../decision.js';
import { StoreError } from '../errors.js';
import { createLimiter } from '../limiter/index.js';
import type { Charge, Charged, GiveBack, Store } from '../store/interface.js';

/** A small in-process store for numeric algorithms: each key's state in its own Float64Array. */
class ArrayStore implements Store {
  readonly capabilities = { local: true, algorithms: ['fixed-window'] as const } as unknown as Store['capabilities'];
  private readonly states = new Map<string, Float64Array>();
  charge({ key, algorithm, cost }: Charge, now: number | undefined): Charged {
    if (algorithm.stateKind !== 'numeric') throw new Error('numeric only');
    const state = this.states.get(key);
    const s = state ?? new Float64Array(algorithm.stateSize);
    this.states.set(key, s);
    return {
      decision: algorithm.step(s, 0, state === undefined, { now: now ?? 0, cost, commit: true }),
      took: 'charged',
    };
  }
  peek(key: string, algorithm: Algorithm, cost: number, now: number | undefined): Decision {
    if (algorithm.stateKind !== 'numeric') throw new Error('numeric only');
    const state = this.states.get(key);
    return algorithm.step(state ?? new Float64Array(algorithm.stateSize), 0, state === undefined, {
      now: now ?? 0,
      cost,
      commit: false,
    });
  }
  giveBack({ key, algorithm, cost }: GiveBack, now: number | undefined): void {
    const state = this.states.get(key);
    if (state !== undefined && algorithm.stateKind === 'numeric') algorithm.undo(state, 0, { now: now ?? 0, cost });
  }
  reset(key: string): void {
    this.states.delete(key);
  }
  acquire(): never {
    throw new Error('no leases');
  }
  release(): void {}
}

/** A remote store that is down: every call fails. */
class DownStore extends ArrayStore {
  override readonly capabilities = {
    local: false,
    algorithms: ['fixed-window'] as const,
  } as unknown as Store['capabilities'];
  override charge(): never {
    throw new StoreError('connection refused');
  }
}

describe('combineLimiters', () => {
  it("checks each cost against the limiter's maxCost, as the limiter itself does", async () => {
    const capped = createLimiter({
      algorithm: fixedWindow({ limit: 10, window: '1m' }),
      store: new ArrayStore(),
      clock: () => 0,
      maxCost: 2,
    });
    await expect(capped.consume('k', 5)).rejects.toMatchObject({ code: 'RL_COST_EXCEEDS_CAPACITY' });
    await expect(combineLimiters([capped]).consume('k', 5)).rejects.toMatchObject({ code: 'RL_COST_EXCEEDS_CAPACITY' });
    expect((await capped.peek('k')).remaining).toBe(10);
  });

  it('a limit that failed open (store down, policy allow) never binds the combined decision while another limit answered', async () => {
    const clock = () => 1_000;
    const tenant = createLimiter({
      algorithm: fixedWindow({ limit: 10, window: '1m' }),
      store: new ArrayStore(),
      clock,
    });
    const user = createLimiter({
      algorithm: fixedWindow({ limit: 3, window: '1m' }),
      store: new DownStore(),
      clock,
      onStoreError: 'allow',
      timeout: false,
    });
    for (let i = 0; i < 4; i++) await tenant.consume('acme');
    const combined = await combineLimiters([tenant, user]).consume(['acme', 'alice']);
    expect(combined.decisions[1]).toMatchObject({ allowed: true, reason: 'store-error', remaining: 2 });
    // The tenant's real quota (5 left) is reported, not the made-up 2 of the limit that failed open.
    expect(combined).toMatchObject({ allowed: true, deniedBy: -1, limit: 10, remaining: 5 });
    expect(combined.reason).toBeUndefined();
  });

  it('the combined decision: the binding limit’s fields (its reason only when it has one), then the decisions, the denier, release and settle', async () => {
    const perMinute = (limit: number, store: Store) =>
      createLimiter({ algorithm: fixedWindow({ limit, window: '1m' }), store, clock: () => 1_000, timeout: false });
    const [roomy, tight] = [perMinute(10, new ArrayStore()), perMinute(3, new ArrayStore())];
    // A store that is down, and the default failure policy (deny): a denial with a reason.
    const down = perMinute(3, new DownStore());
    const fields = ['allowed', 'limit', 'remaining', 'resetMs', 'retryAfterMs', 'delayMs', 'policy', 'at'];
    const after = ['decisions', 'deniedBy', 'release', 'settle'];
    const admitted = combineLimiters([roomy, tight]).consumeSync('k');
    expect(Object.keys(admitted)).toEqual([...fields, ...after]);
    const binding = admitted.decisions[1]!;
    expect(admitted).toMatchObject({ ...binding, deniedBy: -1, decisions: [admitted.decisions[0], binding] });
    const denied = await combineLimiters([roomy, down]).consume('k');
    expect(Object.keys(denied)).toEqual([...fields, 'reason', ...after]);
    expect(denied).toMatchObject({ ...denied.decisions[1], reason: 'store-error', deniedBy: 1 });
  });
});
