import { StoreClosedError, type Algorithm, type Decision } from '@rl/core/store';
import type { Batcher } from './batcher.js';
import type { ClientAdapter, RedisClient } from './clients/client.js';
import { decisionOf } from './decision-reply.js';
import type { GroupCall } from './group-scripts.js';
import { configurationArguments, type ScriptPlan } from './script-plan.js';
import type { ScriptPlans } from './script-plans.js';
import type { StoreKeys } from './store-keys.js';
import { storeError } from './store-error.js';
import { appendArguments, callOf, type Operation } from './wire.js';

/** A call's values: the arguments of src/wire.ts in their order, `undefined` for an absent one. */
export type Values = readonly (string | undefined)[];

/** What a {@link ScriptSender} sends through: the store's client and the parts that say what each call is. */
export interface SenderParts {
  /** The client given, as given (the `this` of a script call). */
  readonly client: RedisClient;
  readonly adapter: ClientAdapter;
  readonly plans: ScriptPlans;
  readonly keys: StoreKeys;
  /** Puts the calls of a turn into batch calls; absent with `batch: false`. */
  readonly batcher: Batcher | undefined;
}

/**
 * Sends a store's script calls: each one `EVALSHA` of its call's script, or a share of a batch call
 * ({@link Batcher}); and the calls of the group script. It knows what a call sends (src/wire.ts), not
 * what it means: the store's parts make the calls (charges.ts, control-commands.ts). Once closed, every
 * call throws `StoreClosedError` at once.
 */
export class ScriptSender {
  private isClosed = false;
  private readonly client: RedisClient;
  private readonly adapter: ClientAdapter;
  private readonly plans: ScriptPlans;
  private readonly keys: StoreKeys;
  private readonly batcher: Batcher | undefined;

  constructor({ client, adapter, plans, keys, batcher }: SenderParts) {
    this.client = client;
    this.adapter = adapter;
    this.plans = plans;
    this.keys = keys;
    this.batcher = batcher;
  }

  /** True once {@link close} was called. */
  get closed(): boolean {
    return this.isClosed;
  }

  /** Every later call throws `StoreClosedError`. */
  close(): void {
    this.isClosed = true;
  }

  /**
   * One call of `op` with `values` on `key`'s state under `plan`: its call (src/wire.ts, idempotent when
   * the values carry an id) is one `EVALSHA` of that call's script, or a share of a batch call: its keys
   * (the bucket and the field in the compact layout), its arguments, then for a configuration sent by
   * argument the configuration. Inline, the absent arguments at the end are left out. Resolves to the
   * reply; a failure rejects as it came (see {@link decide} and {@link run} for a `StoreError`).
   */
  send(plan: ScriptPlan, key: string, op: Operation, values: Values): Promise<unknown> {
    if (this.isClosed) throw new StoreClosedError();
    const call = callOf(op, values);
    const run = plan.calls[call] ?? this.plans.define(plan, call);
    const args = this.keys.start(plan, key, call);
    const batch = this.batcher?.join(plan, args[0]!);
    // A batch, like a call by argument, sends every argument and then the configuration.
    const inline = !plan.byArgument && batch === undefined;
    appendArguments(args, call, values, inline);
    if (plan.byArgument) for (const value of configurationArguments(plan, values)) args.push(value);
    if (batch !== undefined) return this.batcher!.add(batch, call, args);
    return run.apply(this.client, args);
  }

  /** One call whose reply is a decision (a peek, an acquire); a failure as a `StoreError` naming the script. */
  decide(key: string, algorithm: Algorithm, op: Operation, values: Values): Promise<Decision> {
    const plan = this.plans.of(algorithm);
    // One `then` for both outcomes: the reply becomes a decision, a failure a StoreError.
    return this.send(plan, key, op, values).then(
      (reply) => decisionOf(reply as Buffer, 0, algorithm),
      (error: unknown) => {
        throw storeError(plan.script.name, error, this.adapter);
      },
    );
  }

  /** One call that returns nothing (an undo, a settle, a release); a failure as a `StoreError` naming the script. */
  run(key: string, algorithm: Algorithm, op: Operation, values: Values): Promise<unknown> {
    const plan = this.plans.of(algorithm);
    return this.send(plan, key, op, values).catch((error: unknown) => {
      throw storeError(plan.script.name, error, this.adapter);
    });
  }

  /**
   * One group of the group script `script` (its `keys` and `argv`, `decisions` its members: see
   * group-script.ts); resolves to its members' replies. Batched with the groups on the same first Redis
   * key, as decisions are (a migration splits no more); alone without batching.
   */
  sendGroup(group: GroupCall): Promise<unknown> {
    if (this.batcher !== undefined) return this.batcher.sendGroup(group);
    const { script, keys, argv } = group;
    script.call ??= this.adapter.batchScript(script.name, script.lua);
    return script.call(keys.length, [...keys, '1', ...argv]).then((replies) => (replies as unknown[])[0]);
  }

  /** A failure of `plan`'s script, as the store rejects with it: a `StoreError` naming the script. */
  failure(plan: ScriptPlan, error: unknown): unknown {
    return storeError(plan.script.name, error, this.adapter);
  }
}
