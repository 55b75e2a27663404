// The limiter lives in ./limiter/ now. This re-export keeps the imports of files this change does not
// own ('./limiter.js' in combine.test.ts, testing/conformance.ts, testing/run-scenario.ts) building;
// remove it once they import './limiter/index.js'.
export * from './limiter/index.js';
