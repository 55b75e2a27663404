// `@rl/cli`: the `rl` command, and what it is made of for scripts and tests.
export { parsePattern, patternTraffic, patternLengthMs, MAX_ARRIVALS, type PatternPart } from './pattern.js';
export { readTrafficFile, type TrafficFormat } from './traffic-file.js';
export { TrafficBuilder, type Traffic } from './traffic.js';
export { parseLimit, parseCall, limitOf, callText, ALGORITHM_NAMES, type LimitSpec } from './limits.js';
export {
  simulate,
  autoSlice,
  type SimulateOptions,
  type SimulationReport,
  type LimitReport,
  type SliceSeries,
  type KeySeries,
} from './simulate.js';
export { simulateClients, type ClientsOptions } from './clients-source.js';
export { RETRY_MODES, type RetryMode, type ClientStats, type SecondWave } from './client-stats.js';
export { maxInWindow, percentile } from './window-max.js';
export { whatItBounds, boundInSpan } from './bounds.js';
export { formatReport } from './report.js';
export { renderChartSvg, renderLimitChartSvg, svgToPng, writeCharts, type LimitChart } from './chart.js';
export { renderHtmlReport, writeHtmlReport, checkHtmlReportPath, type HtmlReportOptions } from './html-report.js';
export { main, USAGE, type CliIO } from './cli.js';
export {
  parseBackend,
  parseGate,
  parseClasses,
  simulateBackend,
  type BackendSpec,
  type GateSpec,
  type GateReport,
  type BackendReport,
} from './backend.js';
export { formatBackendReport, backendTable } from './backend-report.js';
