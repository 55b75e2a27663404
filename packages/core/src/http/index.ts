// The shared HTTP layer used by the framework adapters: one engine that runs the limits for a
// request (respond.ts), the one module that writes every header format (headers.ts), and client-IP
// keys with IPv6 grouping (keys.ts).
export {
  HttpRateLimiter,
  checkOptionNames,
  RateLimitResult,
  holdRequest,
  problemBody,
  PROBLEM_CONTENT_TYPE,
  type HttpRateLimitOptions,
  type LimitOptions,
  type WaitOptions,
  type KeyFunction,
  type CostFunction,
  type SkipFunction,
  type FrameworkBinding,
  type CloseNotifier,
} from './respond.js';
export {
  HeaderWriter,
  claimResponse,
  nodeHeaderAccess,
  parseHeaderFormat,
  sfString,
  type HeaderFormat,
  type HeaderAccess,
  type HeaderSource,
  type HeaderLimit,
  type NodeHeaderTarget,
} from './headers.js';
export { ipKey, parseIPv6, formatIPv6, parseIPv6Subnet, hasForwardingHeader, DEFAULT_IPV6_SUBNET } from './keys.js';
