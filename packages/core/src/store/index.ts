/**
 * `@rl/core/store`: everything a store author needs (nothing from the root is required). A store applies one algorithm
 * step to one key atomically (see {@link Store}); it learns everything about an algorithm from the
 * algorithm itself (its state layout, its steps, and the `script` descriptor for stores that run a
 * Lua twin), and rounds exact results with {@link decisionFromExact}, as the built-in stores do. The
 * conformance suite every store must pass is `@rl/core/testing`. A store whose parts fail apart (a
 * Redis Cluster's nodes) names each key's part with the optional {@link Store.failureDomain}: the
 * limiter then keeps a store-down circuit per part, and a failed part fails only its own keys.
 */
export type {
  Store,
  StoreCapabilities,
  MaybePromise,
  Charge,
  Charged,
  ChargeTook,
  TimedCharge,
  ChargeAllOptions,
  GiveBack,
  IdempotentCharge,
  StoredOverride,
} from './interface.js';
export { IDEMPOTENCY_ID_LENGTH, IDEMPOTENCY_FINGERPRINT_LENGTH, MAX_IDEMPOTENCY_REPLAYS } from './interface.js';
export type { Algorithm, AlgorithmKind, Settlement } from '../algorithm.js';
export type { Decision, DecisionReason, Policy } from '../decision.js';
export {
  InvalidOptionError,
  ResetUnconfirmedError,
  StoreError,
  StoreClosedError,
  UnsupportedError,
} from '../errors.js';
export { systemClock, type Clock } from '../clock.js';
export { systemTimers, checkTimers, unrefTimer, type Timers, type TimerHandle } from '../timers.js';
export type { Duration } from '../duration.js';
export {
  ALGORITHM_KINDS,
  checkCost,
  type AlgorithmCommon,
  type NumericAlgorithm,
  type NumericState,
  type LogAlgorithm,
  type LogState,
  type ConcurrencyAlgorithm,
  type LeaseState,
  type StepRequest,
  type UndoRequest,
  type SettleRequest,
  type ScriptDescriptor,
  type ScriptConstant,
  type TimedConstants,
  type CompactLayout,
  type OwnKeysLayout,
} from '../algorithm.js';
export {
  makeDecision,
  makePolicy,
  decisionFromExact,
  ceilMs,
  floorUnits,
  EPSILON,
  type DecisionFields,
  type ExactDecision,
} from '../decision.js';
export { BlockTable, blockedDecision, markBanned } from './blocks.js';
export { withBans, withBlock, BLOCK_KEY_SUFFIX } from '../algorithms/block.js';
export { withOverrides } from '../algorithms/override.js';
export { decidedUnder, OverrideTable, requestUnder } from './overrides.js';
export { ResetListeners } from './reset-listeners.js';
export { notAsked, rolledBack } from './group-answers.js';
export { checkOptions } from '../options.js';
export { parseTimerDuration, MAX_TIMER_MS } from '../duration.js';
export { heldKey, keyDigest, MAX_PLAIN_KEY_LENGTH } from './key-digest.js';
export { redisClientKind } from '../option-mistakes.js';
