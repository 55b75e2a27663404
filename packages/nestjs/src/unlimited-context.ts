import { emitWarning, errorDocsUrl } from '@rl/core/http';

/** The warning a guard gives when a context other than HTTP passes it unlimited. */
export const UNLIMITED_CONTEXT_CODE = 'RL_UNLIMITED_CONTEXT';

/**
 * A guard let a context of `type` (`graphql`, `ws`, `rpc`: not `http`) through unlimited: a process
 * warning (`RL_UNLIMITED_CONTEXT`) the first time for each type in `told` (a guard's, a module's), so
 * that an app guarding a GraphQL API with `global: true` learns that its resolvers are not limited.
 */
export function warnUnlimitedContext(type: string, told: Set<string>): void {
  if (told.has(type)) return;
  told.add(type);
  emitWarning(
    `RateLimitGuard limits HTTP requests only: a ${type} context passed unlimited (a GraphQL resolver, a WebSocket or microservice message). Limit a GraphQL API at its HTTP route (the platform's middleware, such as @rl/express's rateLimit() on /graphql), or a gateway's messages in the handler with a limiter of its own. (rl, warned once per kind of context.) See ${errorDocsUrl(UNLIMITED_CONTEXT_CODE)}`,
    { code: UNLIMITED_CONTEXT_CODE },
  );
}
