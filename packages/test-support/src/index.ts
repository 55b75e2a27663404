/**
 * `@rl/test-support`: the monorepo's test infrastructure (private, never published). Real Redis
 * servers and Clusters, the shared adapter suite, the examples' shared suites, HTTP test helpers and
 * fake timers that report the holds they schedule.
 */
export {
  startRedisServer,
  startRedisCluster,
  cli,
  sleep,
  type RedisServerHandle,
  type RedisClusterHandle,
} from './redis-server.js';
export {
  startRedisSentinel,
  type RedisSentinelHandle,
  type RedisSentinelOptions,
  type RedisNodeAddress,
} from './redis-sentinel.js';
export {
  startSharedRedis,
  startRedisDeployments,
  useRedis,
  useRedisDeployments,
  type SharedRedis,
  type RedisDeployment,
  type RedisDeployments,
} from './redis-fixtures.js';
export {
  request,
  serve,
  startRequest,
  members,
  deferred,
  nextTurn,
  type ServedApp,
  type TestResponse,
  type RequestInit,
} from './http-client.js';
export { rejection, collectWarnings, captureWarnings } from './capture.js';
export { HoldTimers } from './hold-timers.js';
export { keysSeen, type KeysSeen } from './keys-seen.js';
export {
  injectClient,
  type Inject,
  type InjectClient,
  type InjectRequest,
  type InjectedResponse,
} from './inject-client.js';
export { everyRateAlgorithm } from './algorithms.js';
export { useWorkerScript, workspaceSourcesPlugin, type WorkerScript } from './worker-script.js';
export { nextMessage, releasedTogether, workersStarted, type WorkerMessage } from './worker-messages.js';
export { useStartedWorkers, type StartedWorkers } from './started-workers.js';
export { canListProcesses, processesWith, type MarkedProcess } from './leftovers.js';
export * from './adapter-suite/index.js';
export {
  describeExampleApp,
  listenOnFreePort,
  type ExampleApp,
  type ExampleAppOptions,
  type OpenedApp,
} from './example-app-suite.js';
export { describeServerProcess, serveUntil429AndStop, type ServerCommand } from './example-server-process.js';
export {
  feedObserverScenario,
  decisionEvent,
  OBSERVER_SCENARIO_SERIES,
  EXPORTED_NAMES,
  type ExpectedSeries,
} from './observer-scenario.js';
export { installPrivate, type PrivateInstallOptions } from './private-install.js';
