import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { formatDuration, InvalidOptionError, RateLimitError } from '@rl/core';
import {
  parseBackend,
  parseClasses,
  parseGate,
  simulateBackend,
  type BackendReport,
  type GateSpec,
} from './backend.js';
import { formatBackendReport } from './backend-report.js';
import { writeBackendCharts, writeBackendHtmlReport } from './backend-chart.js';
import { writeCharts } from './chart.js';
import { RETRY_MODES, type RetryMode } from './client-stats.js';
import { simulateClients } from './clients-source.js';
import { durationOption, timerDurationOption } from './duration-option.js';
import { checkHtmlReportPath, writeHtmlReport } from './html-report.js';
import { limitOf, parseLimit, type LimitSpec } from './limits.js';
import { checkWritable } from './output-file.js';
import { parsePattern, patternTraffic } from './pattern.js';
import { progressReporter } from './progress.js';
import { formatReport } from './report.js';
import { HORIZON_NOISE_MS, simulate, type SimulationReport } from './simulate.js';
import { readTrafficFile, type TrafficFormat } from './traffic-file.js';
import type { Traffic } from './traffic.js';

/** Where the command writes, and whether stderr is a terminal (progress is shown there by default). */
export interface CliIO {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  stderrIsTTY: boolean;
}

export const USAGE = `Usage: rl simulate [traffic] --limit <algorithm(options)> [--limit …] [options]

See what rl's algorithms do to your traffic before deploying them: the traffic is replayed through each
limit on a virtual clock, in-process, through the same code as the middleware.

Traffic (one of):
  --pattern <parts>     comma-separated parts, one after the other:
                          "50/s for 60s, 600/s for 300s"   evenly spaced arrivals
                          "poisson 200/s for 30s"          Poisson arrivals (--seed)
                          "idle 5s"                        nothing for a while
                          "burst 400 at 10s"               400 arrivals at 10 s from the start
  --traffic <file>      arrivals from a file: CSV (time,key,cost), JSON lines ({"time","key","cost"};
                        time in seconds or an ISO date), or an access log (common/combined format:
                        [10/Oct/2000:13:55:36 -0700], the client address as the key)
  --format <f>          csv, jsonl, log or auto (default auto)
  --keys <n>            spread a pattern over n keys (arrival i to key i mod n; default 1)
  --cost <units>        each arrival of a pattern costs this many units (default 1)
  --seed <n>            seed of the Poisson parts and of the clients' jitter (default 1)
  --clients <n>         the traffic is sent by n clients that retry (arrival i is a request of client
                        i mod n), with @rl/client's own decisions on the virtual clock, reading the
                        Retry-After and RateLimit fields rl writes; each attempt reaches the limit
  --retry <how>         how the clients retry: none, immediate (at once, the naive client),
                        retry-after (exactly Retry-After), jitter (@rl/client's default: Retry-After
                        plus up to 1s) or paced (jitter, and held by the RateLimit fields); default jitter
  --retries <n>         retries after a request's first attempt, 0 to 100 (default 3, @rl/client's)

Limits:
  --limit <call>        an algorithm of @rl/core and its options, repeatable:
                          "tokenBucket(capacity=400,refillRate=200)"  "fixedWindow(limit=200,window=1s)"
                          "slidingWindowLog(limit=200,window=1s)"      "slidingWindowCounter(limit=200,window=1s)"
                          "leakyBucket(capacity=20,leakRate=100)"      "leakyBucket(capacity=100,leakRate=200,mode=shape)"
                          "calendarWindow(limit=1000,period=month,timeZone=Europe/Paris)" (periods on the
                          arrivals' dates: a traffic file with ISO dates)
  --config <file>       a JSON file with any of these options by their long names ("limits": calls, or
                        {"tokenBucket": {"capacity": 400, "refillRate": 200}}); the command line wins
  --wait <duration>     hold an admitted request up to this long, as the middleware's wait: { maxDelay }
                        (every rate algorithm reserves its slot, as limiter.reserve does)

A backend (instead of rate limits): what concurrency limits do before a backend that slows down
  --backend <spec>      "capacity=100,service=10ms,slow=2s@30s": work served at full speed at once (past
                        it latency grows with the work in flight), its service time, and a step of it
                        at an instant of the run; each --limit is then none, concurrency(limit=50) or
                        adaptiveConcurrency(min=5,max=1000), side by side; --json gives per limit the
                        admitted, refused per class, most in flight, p50/p99 latency and goodput, for
                        the whole run and per --slice (default 5s); --chart and --report draw them
  --classes <weights>   the arrivals' classes for the limits' priorities: "critical=3,normal=3,sheddable=4"

Output:
  --window <duration>   the span of "largest admitted in any window" (default 1s)
  --slice <duration>    the chart's time slice (default: about 120 slices)
  --chart <file>        write the chart, .svg or .png (repeatable): per limit and slice, requests
                        admitted at once, admitted after a delay, and denied
  --report <file>       write the report as one HTML page (.html; self-contained, no network): the
                        table, and a chart per limit to point at (a slice's counts for every limit;
                        a line for each of the 10 busiest keys)
  --json                print the report as JSON (for scripts) instead of the table
  --progress            show progress on stderr even when it is not a terminal
  -h, --help            this help
`;

const OPTIONS = {
  pattern: { type: 'string' },
  traffic: { type: 'string' },
  format: { type: 'string' },
  keys: { type: 'string' },
  cost: { type: 'string' },
  seed: { type: 'string' },
  clients: { type: 'string' },
  retry: { type: 'string' },
  retries: { type: 'string' },
  limit: { type: 'string', multiple: true },
  config: { type: 'string' },
  wait: { type: 'string' },
  window: { type: 'string' },
  slice: { type: 'string' },
  chart: { type: 'string', multiple: true },
  report: { type: 'string' },
  json: { type: 'boolean' },
  backend: { type: 'string' },
  classes: { type: 'string' },
  progress: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Values = {
  [K in keyof typeof OPTIONS]?: (typeof OPTIONS)[K] extends { multiple: true }
    ? string[]
    : (typeof OPTIONS)[K]['type'] extends 'boolean'
      ? boolean
      : string;
};

/**
 * Runs `rl <argv>` and resolves its exit code: 0 done, 1 failed, 2 a usage error (its message, which
 * names the option or part to fix, on stderr).
 */
export async function main(argv: readonly string[], io: CliIO): Promise<number> {
  try {
    const [command, ...rest] = argv;
    if (command === undefined) {
      io.stderr(USAGE);
      return 2;
    }
    if (command === '-h' || command === '--help' || command === 'help') {
      io.stdout(USAGE);
      return 0;
    }
    if (command !== 'simulate') throw new InvalidOptionError('command', command, 'simulate (see rl --help)');
    const values = parse(rest);
    if (values.help) {
      io.stdout(USAGE);
      return 0;
    }
    const options = await withConfig(values);
    if (options.backend !== undefined) {
      const report = await runBackend(options, rest);
      io.stdout(options.json ? JSON.stringify(report, null, 2) + '\n' : formatBackendReport(report));
      return 0;
    }
    const report = await run(options, io, rest);
    io.stdout(options.json ? JSON.stringify(report, null, 2) + '\n' : formatReport(report));
    return 0;
  } catch (error) {
    if (error instanceof RateLimitError) {
      io.stderr(`rl: ${error.message}\n`);
      return 2;
    }
    io.stderr(`rl: ${(error as Error)?.stack ?? String(error)}\n`);
    return 1;
  }
}

function parse(args: readonly string[]): Values {
  try {
    return parseArgs({ args: [...args], options: OPTIONS, strict: true, allowPositionals: false }).values as Values;
  } catch (error) {
    // node:util's messages name the option ("Unknown option '--limt'"); keep them, typed.
    throw new InvalidOptionError(
      'rl simulate',
      args.join(' '),
      `${(error as Error).message.replace(/\.$/, '')}; see rl simulate --help`,
    );
  }
}

/** The options of a `--config` file under the command line's (which win; `--limit`s replace the file's limits). */
async function withConfig(values: Values): Promise<Values & { limits: LimitSpec[]; gates: GateSpec[] }> {
  let file: Record<string, unknown> = {};
  if (values.config !== undefined) {
    let text: string;
    try {
      text = await readFile(values.config, 'utf8');
    } catch {
      throw new InvalidOptionError('--config', values.config, 'a JSON file that exists');
    }
    try {
      file = JSON.parse(text) as Record<string, unknown>;
    } catch (error) {
      throw new InvalidOptionError('--config', values.config, `a JSON file (${(error as Error).message})`);
    }
    if (file === null || typeof file !== 'object' || Array.isArray(file))
      throw new InvalidOptionError('--config', values.config, 'a JSON object of options');
    // Its own names only (`__proto__`, `constructor` are no options); `limit`, `config` and `help` are
    // the command line's (a file's limits are `limits`).
    const names = ['limits', ...Object.keys(OPTIONS).filter((o) => o !== 'limit' && o !== 'config' && o !== 'help')];
    for (const name of Object.keys(file)) {
      if (!names.includes(name))
        throw new InvalidOptionError(`--config ${name}`, file[name], `an option of rl simulate: ${names.join(', ')}`);
    }
  }
  const merged: Values = {};
  for (const name of Object.keys(OPTIONS) as (keyof typeof OPTIONS)[]) {
    const own = values[name];
    const fromFile = file[name];
    // A flag is true or false in the file: the string "false" would read as set.
    if (OPTIONS[name].type === 'boolean' && fromFile !== undefined && typeof fromFile !== 'boolean')
      throw new InvalidOptionError(`--config ${name}`, fromFile, 'true or false');
    (merged as Record<string, unknown>)[name] =
      own ??
      (fromFile === undefined
        ? undefined
        : name === 'chart' && !Array.isArray(fromFile)
          ? [String(fromFile)]
          : typeof fromFile === 'boolean' || Array.isArray(fromFile)
            ? fromFile
            : String(fromFile));
  }
  if (merged.backend !== undefined) {
    // A backend's limits are gates: none, fixed permits, an adaptive limit.
    const texts = values.limit ?? (Array.isArray(file.limits) ? file.limits.map(String) : []);
    if (texts.length === 0)
      throw new InvalidOptionError(
        '--limit',
        undefined,
        'with --backend, at least one limit: none, concurrency(limit=50) or adaptiveConcurrency(min=5,max=1000)',
      );
    return { ...merged, limits: [], gates: eachOnce(texts.map(parseGate)) };
  }
  if (merged.classes !== undefined)
    throw new InvalidOptionError(
      '--classes',
      merged.classes,
      'no value without --backend (the classes are an adaptive limit’s)',
    );
  const limits = values.limit !== undefined ? values.limit.map(parseLimit) : configLimits(file.limits);
  if (limits.length === 0)
    throw new InvalidOptionError(
      '--limit',
      undefined,
      'at least one limit, for example --limit "tokenBucket(capacity=400,refillRate=200)"',
    );
  return { ...merged, limits: eachOnce(limits), gates: [] };
}

/** `limits`, when no two are the same (a run is deterministic: the same limit twice is the same result, and one chart panel). */
function eachOnce<L extends { readonly label: string }>(limits: L[]): L[] {
  const seen = new Set<string>();
  for (const { label } of limits) {
    if (seen.has(label))
      throw new InvalidOptionError('--limit', label, 'each limit once (the same limit twice gives the same results)');
    seen.add(label);
  }
  return limits;
}

function configLimits(value: unknown): LimitSpec[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new InvalidOptionError('--config limits', value, 'an array of limits');
  return value.map((entry, i) => {
    if (typeof entry === 'string') return parseLimit(entry);
    const names = entry !== null && typeof entry === 'object' ? Object.keys(entry as object) : [];
    if (names.length !== 1)
      throw new InvalidOptionError(
        `--config limits[${i}]`,
        entry,
        'a call such as "fixedWindow(limit=200,window=1s)" or {"fixedWindow": {"limit": 200, "window": "1s"}}',
      );
    return limitOf(names[0]!, (entry as Record<string, Record<string, unknown>>)[names[0]!]!);
  });
}

/** `--wait` against each limit: at most the longest wait its state can queue (as the middleware's `wait.maxDelay` is checked, named by the option given). */
function checkWait(given: string, waitMs: number, limits: readonly LimitSpec[]): void {
  for (const { label, algorithm } of limits) {
    if (waitMs > algorithm.maxReserveMs + HORIZON_NOISE_MS)
      throw new InvalidOptionError(
        '--wait',
        given,
        `at most ${formatDuration(algorithm.maxReserveMs)} for ${label}, the longest wait its state can queue (see the README's Waiting table)`,
      );
  }
}

/** How many keys get a line of their own (the busiest): in the JSON's `slices.keys` and the HTML report. */
const KEY_SERIES = 10;

async function run(o: Values & { limits: LimitSpec[] }, io: CliIO, args: readonly string[]): Promise<SimulationReport> {
  const traffic = await loadTraffic(o);
  const windowMs = o.window === undefined ? 1000 : durationOption(o.window, '--window');
  const sliceMs = o.slice === undefined ? undefined : durationOption(o.slice, '--slice');
  const waitMs = o.wait === undefined ? undefined : timerDurationOption(o.wait, '--wait');
  if (waitMs !== undefined) checkWait(o.wait!, waitMs, o.limits);
  const charts = checkOutputs(o);
  const progress =
    o.progress === true || io.stderrIsTTY
      ? progressReporter(
          o.limits.map((l) => l.label),
          io.stderr,
          io.stderrIsTTY,
        )
      : undefined;
  const simulateOptions = { windowMs, sliceMs, waitMs, keySeries: KEY_SERIES, onProgress: progress };
  if (o.clients === undefined) checkNoClientOptions(o);
  const report =
    o.clients === undefined
      ? simulate(traffic, o.limits, simulateOptions)
      : simulateClients(traffic, o.limits, { ...simulateOptions, ...clientOptions(o) });
  await writeCharts(report, charts, o.pattern ?? o.traffic);
  if (o.report !== undefined)
    await writeHtmlReport(report, o.report, {
      title: o.pattern ?? o.traffic,
      command: ['rl', 'simulate', ...args].map(shellWord).join(' '),
    });
  return report;
}

/** `--backend` mode: the traffic's arrivals through each gate into the backend; its charts and HTML report. */
async function runBackend(o: Values & { gates: GateSpec[] }, args: readonly string[]): Promise<BackendReport> {
  for (const name of ['wait', 'window', 'clients', 'retry', 'retries'] as const)
    if (o[name] !== undefined)
      throw new InvalidOptionError(`--${name}`, o[name], 'no value with --backend (it is for rate limits)');
  const backend = parseBackend(o.backend!);
  const charts = checkOutputs(o);
  const traffic = await loadTraffic(o);
  const sliceMs = o.slice === undefined ? 5000 : durationOption(o.slice, '--slice');
  const classes = o.classes === undefined ? undefined : parseClasses(o.classes);
  const report = simulateBackend(traffic, backend, o.gates, { sliceMs, classes });
  await writeBackendCharts(report, charts);
  if (o.report !== undefined)
    await writeBackendHtmlReport(report, o.report, ['rl', 'simulate', ...args].map(shellWord).join(' '));
  return report;
}

/**
 * The `--chart` files, once every output is checked before anything runs: each chart and the report
 * named for its format, in a folder that exists and is ours to write (a long run is not thrown away,
 * nor a chart written, for a report that cannot be).
 */
function checkOutputs(o: Values): readonly string[] {
  const charts = o.chart ?? [];
  for (const path of charts) {
    if (!/\.(svg|png)$/i.test(path))
      throw new InvalidOptionError('--chart', path, 'a file name ending in .svg or .png');
    checkWritable('--chart', path);
  }
  if (o.report !== undefined) {
    checkHtmlReportPath(o.report);
    checkWritable('--report', o.report);
  }
  return charts;
}

async function loadTraffic(o: Values): Promise<Traffic> {
  if ((o.pattern === undefined) === (o.traffic === undefined)) {
    throw new InvalidOptionError(
      '--pattern',
      o.pattern,
      'either --pattern "50/s for 60s, 600/s for 300s" or --traffic <file> (one of them)',
    );
  }
  if (o.traffic !== undefined) {
    for (const name of ['keys', 'cost', 'seed'] as const) {
      // With --clients, --seed seeds their jitter.
      if (o[name] !== undefined && !(name === 'seed' && o.clients !== undefined))
        throw new InvalidOptionError(`--${name}`, o[name], 'no value with --traffic (the file gives keys and costs)');
    }
    const format = o.format ?? 'auto';
    if (!['csv', 'jsonl', 'log', 'auto'].includes(format))
      throw new InvalidOptionError('--format', format, 'csv, jsonl, log or auto');
    return readTrafficFile(o.traffic, format as TrafficFormat);
  }
  if (o.format !== undefined)
    throw new InvalidOptionError('--format', o.format, 'no value with --pattern (it is for --traffic files)');
  const keys = integer(o.keys, '--keys', 1);
  const seed = integer(o.seed, '--seed', 1);
  const cost = o.cost === undefined ? 1 : Number(o.cost);
  if (!(Number.isFinite(cost) && cost > 0)) throw new InvalidOptionError('--cost', o.cost, 'a number greater than 0');
  return patternTraffic(parsePattern(o.pattern!), { keys, seed, cost });
}

/** `--clients`, `--retry` and `--retries`, checked. */
function clientOptions(o: Values): { clients: number; retry: RetryMode; retries: number; seed: number } {
  const retry = (o.retry ?? 'jitter') as RetryMode;
  if (!RETRY_MODES.includes(retry)) throw new InvalidOptionError('--retry', o.retry, RETRY_MODES.join(', '));
  // Digits only: `Number('')` is 0, and an empty `--retries=` is no choice of 0.
  const retries = o.retries === undefined ? 3 : /^\s*\d+\s*$/.test(o.retries) ? Number(o.retries) : NaN;
  if (!Number.isInteger(retries) || retries < 0 || retries > 100)
    throw new InvalidOptionError('--retries', o.retries, 'a whole number from 0 to 100');
  return { clients: integer(o.clients, '--clients', 1), retry, retries, seed: integer(o.seed, '--seed', 1) };
}

/** `--retry` and `--retries` say how clients retry: without `--clients` there are none. */
function checkNoClientOptions(o: Values): void {
  for (const name of ['retry', 'retries'] as const) {
    if (o[name] !== undefined)
      throw new InvalidOptionError(`--${name}`, o[name], 'no value without --clients <n> (the clients that retry)');
  }
}

/** A word of a command line as a POSIX shell reads it back. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

function integer(value: string | undefined, field: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 10_000_000)
    throw new InvalidOptionError(field, value, 'a whole number from 1 to 10000000');
  return n;
}
