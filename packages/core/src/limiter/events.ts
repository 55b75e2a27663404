import type { EventEmitter } from 'eventemitter3';
import type { DecisionReason } from '../decision.js';
import { StoreError, StoreTimeoutError } from '../errors.js';

/** Payload of the limiter's `'storeError'` event. */
export interface StoreErrorEvent {
  error: Error;
  reason: Extract<DecisionReason, 'store-error' | 'timeout'>;
  key: string;
  /** What the limiter did: `'deny'`, `'allow'` or `'fallback'`. */
  action: 'deny' | 'allow' | 'fallback';
}

/** Payload of the limiter's `'circuit'` event: its store-down circuit (of one failure domain) opened or closed. */
export interface CircuitChange {
  state: 'open' | 'closed';
  /** Why it opened; undefined when it closed. */
  reason: 'store-error' | 'timeout' | undefined;
  /** The failure domain (a Cluster master, `host:port`); undefined for a store that is one domain. */
  domain: string | undefined;
}

/**
 * Where a limiter's core tells its events (the public `Limiter` emits them; a fallback built from
 * options has nobody listening). Each is called only when somebody may listen.
 */
export interface LimiterEvents {
  storeError(event: StoreErrorEvent): void;
  circuit(change: CircuitChange): void;
}

/** Events nobody hears (a fallback built from options: only its observers hear it). */
export const UNHEARD: LimiterEvents = {
  storeError: () => undefined,
  circuit: () => undefined,
};

/** The events of a limiter told as `emitter`'s `'storeError'` and `'circuit'` events (dropped without listeners: `'storeError'` is not the special `'error'` event, so it never throws). */
export function emitted(emitter: EventEmitter): LimiterEvents {
  return {
    storeError: (event) => {
      if (emitter.listenerCount('storeError') > 0) emitter.emit('storeError', event);
    },
    circuit: (change) => {
      if (emitter.listenerCount('circuit') > 0) emitter.emit('circuit', change);
    },
  };
}

/** The `'storeError'` event of a store call that failed with `error` (anything thrown: a non-error becomes a `StoreError`). */
export function storeErrorEvent(error: unknown, key: string, action: StoreErrorEvent['action']): StoreErrorEvent {
  const err = error instanceof Error ? error : new StoreError(String(error));
  return { error: err, reason: err instanceof StoreTimeoutError ? 'timeout' : 'store-error', key, action };
}
