import type { ChargeAllOptions, Charge, Charged, GiveBack, TimedCharge } from '@rl/core/store';
import { chargedOf } from './decision-reply.js';
import { GroupScripts } from './group-scripts.js';
import { RequestGroup, type GroupHost } from './request-group.js';
import type { ScriptPlans } from './script-plans.js';
import type { ScriptSender } from './script-sender.js';
import type { StoreKeys } from './store-keys.js';
import { chargeOperation, chargeValues, giveBackValues, timeOf } from './wire.js';

/** The lease id of a lease limit's charge: none (no lease is ever named so), a peek, as in the memory store. */
export const NO_LEASE = '';

/**
 * The charges of a Redis store: one charge ({@link charge}), a give-back ({@link giveBack}), and a
 * request's charges together ({@link chargeAll}). Each is a record (`Charge`, `GiveBack` of
 * @rl/core/store) made into its call on the wire (src/wire.ts: its operation, and its idempotency read
 * from its values), and each reply into a `Charged` ({@link chargedOf}).
 */
export class Charges {
  /** The scripts that decide a request's charges together (see {@link chargeAll}); with batching, the batcher defines them. */
  readonly groupScripts = new GroupScripts();
  /** What a request group needs of the store. */
  private readonly host: GroupHost;

  constructor(
    private readonly sender: ScriptSender,
    private readonly plans: ScriptPlans,
    keys: StoreKeys,
  ) {
    this.host = {
      sender,
      keys,
      scripts: this.groupScripts,
      planOf: (algorithm) => plans.of(algorithm),
      alone: (charge, now) => this.charge(charge, now),
    };
  }

  /**
   * One call of the algorithm's script: a consume ('c'), or with `maxDelayMs` a reservation ('v'),
   * either with its idempotent charge (see `Store.charge`). A lease limit's charge reports its state (a
   * peek for no lease), as in the memory store: leases are taken with `acquire`. Throws at once on a
   * closed store and for a malformed idempotent charge; a Redis failure rejects with a `StoreError`.
   */
  charge(charge: Charge, now: number | undefined): Promise<Charged> {
    const { key, algorithm } = charge;
    if (algorithm.stateKind === 'leases') return this.leaseState(charge, now);
    const plan = this.plans.of(algorithm);
    // One `then` for both outcomes: the reply becomes what the charge took, a failure a StoreError.
    return this.sender.send(plan, key, chargeOperation(charge), chargeValues(charge, now)).then(
      (reply) => chargedOf(reply as Buffer, 0, charge),
      (error: unknown) => {
        throw this.sender.failure(plan, error);
      },
    );
  }

  /** A lease limit's charge: its state, a peek for no lease (it takes nothing: a lease is taken with `acquire`). */
  private leaseState({ key, algorithm }: Charge, now: number | undefined): Promise<Charged> {
    return this.sender
      .decide(key, algorithm, 'p', [NO_LEASE, timeOf(now)])
      .then((decision): Charged => ({ decision, took: 'charged' }));
  }

  /** One undo ('u'; with the charge's idempotency id, its remembered decision forgotten in the same call): see `Store.giveBack`. A lease limit gives nothing back here (its permits go with `release`). */
  async giveBack(back: GiveBack, now: number | undefined): Promise<void> {
    if (back.algorithm.stateKind === 'leases') return;
    await this.sender.run(back.key, back.algorithm, 'u', giveBackValues(back, now));
  }

  /**
   * Decides one request's charges (see `Store.chargeAll`) in one script call per Cluster slot (one on a
   * standalone Redis), all-or-nothing: the group script runs each charge's own step, and gives back in
   * the same script what the earlier ones took when a later enforced one denies (or would hold the
   * request past `holdMs`). Batched with the other requests' groups of the same turn. A value per call
   * ({@link RequestGroup}): nothing of it stays on the store.
   */
  chargeAll(charges: readonly TimedCharge[], options: ChargeAllOptions): readonly Promise<Charged>[] {
    const group = new RequestGroup(this.host, charges, options.holdMs);
    group.send();
    return group.answers;
  }
}
