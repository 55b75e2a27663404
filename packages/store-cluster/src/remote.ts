/**
 * The `@rl/store-cluster/remote` entry: the wire and the holder without any transport, runtime-neutral
 * (no `node:` import), for a store that reaches a holder another way (`@rl/store-durable-object`: a
 * Durable Object is the holder, a subrequest the channel). See docs/design/cluster-store.md, "The wire".
 */
export { Holder, type HolderCounts } from './holder.js';
export type { HolderConnection } from './transport.js';
export {
  AlgorithmCache,
  decode,
  encode,
  wireAlgorithm,
  VERBS,
  WIRE_VERSION,
  type Answer,
  type Verb,
  type WireAlgorithm,
  type WireError,
} from './wire.js';
export { charged, chargedEach, decision, holderError, none } from './answers.js';
export { WireStore } from './wire-store.js';
