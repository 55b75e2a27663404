// `@rl/core/http`: the shared HTTP layer, for framework adapters: options parsed once (options.ts, their
// types in option-types.ts), the request's keys and costs resolved at the boundary (evaluate.ts) and
// charged through the composition engine (../compose), the result (result.ts) and the adapters' one
// decision tree (responder.ts, over what each adapter does in its idiom: response-io.ts), the one
// module that writes every header format (headers.ts, through header-access.ts), the default key
// (default-key.ts) and client-IP keys with IPv6 grouping (keys.ts), the trust-all-proxies probe
// (trust-probe.ts), holds (hold.ts), a route's options merged over its parent's (route-options.ts), the
// default store and its owner (default-store.ts), a middleware's answer on a Fetch runtime
// (fetch-answer.ts), the Responder's events on a Node response (node-response.ts), a Fetch request's
// client address (fetch-client.ts), the problem body (problem.ts) and what a user function's throw
// becomes on a framework's error path (thrown-value.ts).
export { HttpRateLimiter, withLimiter, type LimiterHandle } from './rate-limiter.js';
export { keyControls, type KeyControls, type HttpOverrideOptions, type OverrideTarget } from './key-controls.js';
export { checkOptionNames } from './options.js';
export { mergeRouteOptions, type RouteSetting, type RouteStateOptions } from './route-options.js';
export { DefaultStore } from './default-store.js';
export { DefaultKey } from './default-key.js';
export type * from './application-types.js';
export {
  checkAdapterFunctions,
  directBinding,
  requestHeader,
  type FrameworkBinding,
  type RequestHeaders,
  type NodeRequestHeaders,
  type FetchRequestHeaders,
} from './binding.js';
export { FetchAnswer, type FetchRequest } from './fetch-answer.js';
export { checkTrustProxy, forwardedClient, runtimeClientAddress, type TrustProxy } from './fetch-client.js';
export { RateLimitResult } from './result.js';
export { idempotencyKeyFrom } from './idempotency-key.js';
export { holdRequest, type ClientLeaving } from './hold.js';
export { problemBody, errorProblemBody, PROBLEM_CONTENT_TYPE } from './problem.js';
export { Responder, type ResponsePolicy } from './responder.js';
export { warnLateError, type ResponseIO, type ResponseEvents, type ResponseEnded } from './response-io.js';
export { nodeResponseEvents, type NodeResponse, type NodeResponseEvents } from './node-response.js';
export { checkSuccessTest, type SuccessTest } from './outcome.js';
export { OutageLog, consoleLogger, OUTAGE_QUIET_MS, type OutageLogger } from './outage-log.js';
export { PrefixRegistry } from './prefixes.js';
export { DoubleCountCheck, DOUBLE_COUNT_CODE, type ResultSource } from './double-count.js';
export { HeaderWriter, parseHeaderFormat, type HeaderFormat, type HeaderSource, type HeaderLimit } from './headers.js';
export {
  claimResponse,
  nodeHeaderAccess,
  fetchHeaderAccess,
  type HeaderAccess,
  type NodeHeaderTarget,
} from './header-access.js';
export { sfString } from './header-values.js';
// A warning on every runtime (a process warning, else console.warn), for an adapter with no error path to report on.
export { emitWarning } from '../runtime.js';
// Where a code's explanation and fix are (docs/errors.md), for an adapter's own warnings.
export { errorDocsUrl } from '../errors.js';
export { ipKey, parseIPv6, formatIPv6, parseIPv6Subnet, hasForwardingHeader, DEFAULT_IPV6_SUBNET } from './keys.js';
export { trustsEveryAddress, resolvesForgedClient, type ForgedRequest } from './trust-probe.js';
export { forwardableError } from './thrown-value.js';
