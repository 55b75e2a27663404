// Moved to compose/group.ts; this re-export remains only while testing/conformance.ts imports this path.
export { combineLimiters, LimiterGroup, type CombinedDecision } from './compose/group.js';
