// The types of the HTTP layer's options that an application names (in its key, cost and skip
// functions, its limits): one list, exported by `@rl/core` and by `@rl/core/http` alike.
export type {
  HttpRateLimitOptions,
  LimitOptions,
  WaitOptions,
  KeyFunction,
  CostFunction,
  ActualCostFunction,
  SkipFunction,
  DenyFunction,
  AlgorithmFunction,
  IdempotencyKeyFunction,
  FingerprintFunction,
  PriorityFunction,
} from './option-types.js';
