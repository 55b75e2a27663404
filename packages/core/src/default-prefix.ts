import { emitWarningOnce } from './runtime.js';
import type { Store } from './store/interface.js';

/** The code of the warning for a limit on a shared (remote) store without a prefix of its own. */
export const DEFAULT_PREFIX_CODE = 'RL_DEFAULT_PREFIX';

/**
 * Warns `RL_DEFAULT_PREFIX` when a limit keeps its state in a remote store (`capabilities.local`
 * false: Redis, shared by every process that connects to it) under a namespace it did not choose:
 * the middlewares' default (`rl:<limit names>`, the same in every app with the same limits) or
 * `createLimiter`'s none (its keys as given). Another app on that Redis with the same default then
 * shares its counts (and its denials). Once per process per default namespace (`namespace`, '' for
 * none); `owner` is what the user called (`rateLimit`, `createLimiter`). A memory store is never
 * shared: no warning.
 */
export function warnDefaultPrefix(store: Store | undefined, owner: string, namespace: string): void {
  if (store === undefined || store.capabilities.local) return;
  const where = namespace === '' ? 'with no prefix (its keys as given)' : `under the default prefix "${namespace}"`;
  emitWarningOnce(
    namespace,
    `${owner} keeps its counts in a shared store ${where}: every app on the same Redis with the same default shares them, and their denials. ` +
      `Give each app (and each limit) a prefix of its own: ${owner}({ …, prefix: 'my-app' }). The instances of one app share a limit by sharing its prefix.`,
    { code: DEFAULT_PREFIX_CODE },
  );
}
