import type { AlgorithmCommon, NumericAlgorithm, ScriptConstant, TimedConstants } from '../algorithm.js';

/** What an algorithm's own file writes beside its fields: its steps, and what it bounds. */
type Behaviour = 'describe' | 'boundInSpan' | 'leaseHoldMs';

/**
 * What an algorithm states once about one configuration: the fields every algorithm has (see
 * {@link AlgorithmCommon}) and the constants its Lua twin reads. {@link compactFields} and
 * {@link ownKeysFields} make from it the algorithm's fields and its `script` descriptor (the twin's
 * name is the kind; a new configuration has no lockout, `blockMs` 0: see `withBlock`); the
 * algorithm's own file adds its steps, `describe()`, `boundInSpan()` and `leaseHoldMs()`.
 */
export type AlgorithmSpec = Omit<AlgorithmCommon, 'script' | 'blockMs' | 'checksBlocks' | Behaviour> & {
  /** The configuration its Lua twin reads, in the order the store declares it. */
  readonly constants: readonly ScriptConstant[];
  /** The layout revision of its state (see `ScriptDescriptor.layoutRevision`); default 1. */
  readonly layoutRevision?: number;
  /** The constants its twin reads that change with time (see `ScriptDescriptor.timed`). */
  readonly timed?: TimedConstants;
};

/**
 * The fields of an algorithm whose state is `stateSize` numbers (kept compactly by a store), from its
 * spec: `horizonMs` is the longest time one of its states can need to become the same as no state
 * (`CompactLayout.horizonMs`).
 */
export function compactFields(
  spec: AlgorithmSpec & { readonly stateSize: number; readonly horizonMs: number },
): Omit<NumericAlgorithm, 'step' | 'expiresAt' | 'undo' | 'settle' | Behaviour> {
  const { constants, layoutRevision = 1, stateSize, horizonMs, timed, ...common } = spec;
  const layout = { compact: true, stateSize, horizonMs } as const;
  return {
    ...common,
    stateKind: 'numeric',
    stateSize,
    blockMs: 0,
    checksBlocks: false,
    script:
      timed === undefined
        ? { name: spec.kind, constants, layout, layoutRevision }
        : { name: spec.kind, constants, layout, layoutRevision, timed },
  };
}

/**
 * The fields of an algorithm whose state a store keeps under keys of its own (a log, leases), from its
 * spec: `keys` are their suffixes, in the order its twin reads them (`OwnKeysLayout.keys`).
 */
export function ownKeysFields<S extends 'log' | 'leases'>(
  spec: AlgorithmSpec & { readonly stateKind: S; readonly keys: readonly string[] },
): Omit<AlgorithmCommon, Behaviour> & { readonly stateKind: S } {
  const { constants, layoutRevision = 1, keys, timed: _, ...common } = spec;
  return {
    ...common,
    blockMs: 0,
    checksBlocks: false,
    script: { name: spec.kind, constants, layout: { compact: false, keys }, layoutRevision },
  };
}
