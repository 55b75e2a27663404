import { ResetUnconfirmedError, StoreError } from '@rl/core/store';
import type { ClientAdapter } from './clients/client.js';

/**
 * Redis answers about one key, not about the server: a value of another type under the store's key
 * (another program wrote it), the scripts' own check of a call's input (`ERR rl: …`), or a Cluster's
 * answer that the key's slot is moving (`TRYAGAIN`, `ASK`, `MOVED`, when the client gave up following
 * it). Such a failure is `keyOnly`: the store-down circuit does not count it (see `StoreError.keyOnly`).
 * Read from the reply as Redis wrote it (`ClientAdapter.serverReply`: GLIDE rewrites it).
 */
const KEY_ONLY_REPLY = /^(?:WRONGTYPE |ERR rl: |TRYAGAIN|ASK |MOVED )/;

/**
 * The failure as a StoreError; when the client is closed (every call fails at once), the message says
 * why and what to do. A notice of a control that not every instance confirmed is no failure of Redis
 * (the change was applied): its `ResetUnconfirmedError` is returned as it is.
 */
export function storeError(
  operation: string,
  error: unknown,
  adapter: ClientAdapter,
): StoreError | ResetUnconfirmedError {
  if (error instanceof StoreError || error instanceof ResetUnconfirmedError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const closed = adapter.closedReason();
  return new StoreError(`Redis ${operation} failed: ${message}${closed === undefined ? '' : ` (${closed})`}`, {
    cause: error,
    keyOnly: KEY_ONLY_REPLY.test(adapter.serverReply(error)),
  });
}
