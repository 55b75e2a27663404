import {
  nextStep,
  PacingBook,
  partitionReports,
  passWaiters,
  retryAfterMs,
  serverWait,
  type PacingTicket,
  type RetryPolicy,
} from '@rl/client';
import { InvalidOptionError } from '@rl/core';
import type { HeaderAccess } from '@rl/core/http';
import { MinHeap } from '@rl/core/simulation';
import { MemoryStore } from '@rl/store-memory';
import { clientStats, type ClientRun, type ClientStats, type RetryMode } from './client-stats.js';
import type { LimitSpec } from './limits.js';
import { mulberry32 } from './random.js';
import {
  autoSlice,
  httpLimiter,
  simulate,
  type LimitReport,
  type SimulateOptions,
  type SimulationReport,
} from './simulate.js';
import { TrafficBuilder, type Traffic } from './traffic.js';

export interface ClientsOptions extends SimulateOptions {
  /** How many clients send the traffic: arrival `i` is a request of client `i mod clients`. */
  clients: number;
  /** How they retry; default `'jitter'` (`@rl/client`'s default). */
  retry?: RetryMode;
  /** Retries after a request's first attempt, 0 to 100; default 3 (`@rl/client`'s default). */
  retries?: number;
  /** Seed of the jitter draws (mulberry32); default 1. */
  seed?: number;
}

/**
 * `createFetch`'s defaults (`maxElapsed` 60 s, `maxRetryAfter` 30 s, `jitter` 1 s, `backoff` 500 ms),
 * as the policy its options parse to.
 */
const DEFAULT_POLICY: RetryPolicy = {
  retries: 3,
  maxElapsedMs: 60_000,
  maxRetryAfterMs: 30_000,
  jitterMs: 1000,
  backoffMs: 500,
};

/** The one pacing scope of a simulated client: every request goes to the one server. */
const SCOPE = 'simulated';
/** The one route of the simulated requests: every one is counted by the limit, as the one server reports. */
const ROUTE = 'GET /';

/** The most attempts a `--clients` run may make (requests × (retries + 1)): about a minute and a gigabyte of the clients' loop. */
export const MAX_CLIENT_ATTEMPTS = 10_000_000;

/**
 * Replays `traffic` as requests of `clients` clients that retry as `retry` says, through each limit
 * (each on a store of its own, as in {@link simulate}), on a virtual clock. Each client runs
 * `@rl/client`'s own decisions: `nextStep` after each answer (retry or stop, and the wait),
 * `serverWait` / `retryAfterMs` / `partitionReports` on the headers rl writes for the answer
 * (`Retry-After` and draft-8 `RateLimit` fields), and with `paced` its own `PacingBook`, waiting in
 * arrival order as `createFetch`'s gate does. Answers come at the instant of the decision (a held
 * request's answer too: the hold is the server's). Jitter draws come from a seeded generator, one
 * sequence per limit: a run is deterministic.
 *
 * Each limit's attempts are then replayed through {@link simulate}, which gives the same decisions
 * (the same limiter, times and order) and the report's table, delays and slices; `clients` is added
 * per limit. The report's `requests` are the logical requests, each limit's `requests` its attempts.
 */
export function simulateClients(
  traffic: Traffic,
  limits: readonly LimitSpec[],
  options: ClientsOptions,
): SimulationReport {
  const retry = options.retry ?? 'jitter';
  const retries = options.retries ?? DEFAULT_POLICY.retries;
  if (!Number.isInteger(retries) || retries < 0 || retries > 100)
    throw new InvalidOptionError('--retries', retries, 'an integer from 0 to 100 (0: no retry, pacing only)');
  if (!Number.isInteger(options.clients) || options.clients < 1)
    throw new InvalidOptionError('--clients', options.clients, 'a whole number of 1 or more');
  // Each attempt is a step of the clients' loop and an arrival of the replay: bounded before the run.
  const mostAttempts = traffic.times.length * ((retry === 'none' ? 0 : retries) + 1);
  if (mostAttempts > MAX_CLIENT_ATTEMPTS)
    throw new InvalidOptionError(
      '--retries',
      retries,
      `at most ${MAX_CLIENT_ATTEMPTS} attempts in all (${traffic.times.length} requests × ${retries + 1} attempts each may make ${mostAttempts}): fewer retries or a shorter pattern`,
    );
  const policy: RetryPolicy = {
    ...DEFAULT_POLICY,
    retries: retry === 'none' ? 0 : retries,
    jitterMs: retry === 'jitter' || retry === 'paced' ? DEFAULT_POLICY.jitterMs : 0,
  };
  const runs = limits.map((limit) =>
    runClients(traffic, limit, {
      clients: options.clients,
      retry,
      policy,
      seed: options.seed ?? 1,
      waitMs: options.waitMs,
    }),
  );
  const first = traffic.times.length === 0 ? 0 : traffic.times[0]!;
  const last = Math.max(first, ...runs.map((r) => r.lastMs));
  const sliceMs = options.sliceMs ?? autoSlice(last - first);
  const reports = runs.map((run, i) => {
    const replayed = simulate(run.attempts, [limits[i]!], { ...options, sliceMs }).limits[0]!;
    if (replayed.admitted !== run.admitted)
      throw new Error(
        `simulate --clients: the replay of ${limits[i]!.label} admitted ${replayed.admitted}, the clients saw ${run.admitted}`,
      );
    return replayed;
  });
  const startMs = Math.floor(first / sliceMs) * sliceMs;
  const sliceCount = Math.max(1, Math.floor((last - startMs) / sliceMs) + 1);
  const limitReports = reports.map((report, i) =>
    withClients(
      report,
      sliceCount,
      clientStats(runs[i]!, {
        retry,
        clients: options.clients,
        retries: policy.retries,
        first,
        startMs,
        sliceMs,
        sliceCount,
      }),
    ),
  );
  return {
    requests: traffic.times.length,
    keys: traffic.keys.length,
    startMs,
    endMs: last,
    sliceMs,
    windowMs: options.windowMs ?? 1000,
    limits: limitReports,
  };
}

/** One attempt of a logical request. */
interface Attempt {
  /** The arrival of the traffic it is an attempt of. */
  readonly request: number;
  readonly client: number;
  /** 1 for the first. */
  readonly number: number;
  /** When its logical request began. */
  readonly start: number;
}

/** An attempt to send at `at` (ties in `seq` order), or a client's pacing timer (`wake`). */
interface Event {
  readonly at: number;
  readonly seq: number;
  readonly attempt?: Attempt;
  readonly wake?: number;
}

/** An attempt waiting at its client's pacing gate. */
interface Waiter {
  /** Every simulated request is of one route ({@link ROUTE}). */
  readonly route: string;
  readonly attempt: Attempt;
  readonly arrived: number;
  /** When it goes whatever the book says (its wait bound). */
  readonly deadline: number;
}

/** The client loop for one limit: a priority queue of attempts and pacing timers on a virtual clock. */
function runClients(
  traffic: Traffic,
  limit: LimitSpec,
  o: { clients: number; retry: RetryMode; policy: RetryPolicy; seed: number; waitMs: number | undefined },
): ClientRun {
  let now = traffic.times.length === 0 ? 0 : traffic.times[0]!;
  const clock = () => now;
  const store = new MemoryStore({ sweepInterval: false, maxKeys: Math.max(1_000_000, traffic.keys.length), clock });
  const { http } = httpLimiter(limit.algorithm, store, clock, {
    unitCosts: traffic.unitCosts,
    waitMs: o.waitMs,
    headers: true,
  });
  const random = mulberry32(o.seed);
  const { policy, retry } = o;
  const books = new Map<number, PacingBook>();
  const queues = new Map<number, Waiter[]>();
  const wakeAt = new Map<number, number>();
  const informed = new Uint8Array(o.clients);
  const events = eventQueue();
  const builder = new TrafficBuilder();
  const retryTimes: number[] = [];
  const secondWaveTimes: number[] = [];
  const run = {
    admitted: 0,
    denied: 0,
    gaveUp: 0,
    maxAttempts: 0,
    held: 0,
    deniedInformed: 0,
    lastThrough: undefined as number | undefined,
  };
  const n = traffic.times.length;
  let seq = n;
  const arrival = { key: '', cost: 1 };

  const send = (a: Attempt, ticket: PacingTicket | undefined): void => {
    arrival.key = traffic.keys[traffic.keyIndex[a.request]!]!;
    arrival.cost = traffic.costs[a.request]!;
    builder.add(now, arrival.key, arrival.cost);
    if (a.number > 1) retryTimes.push(now);
    if (a.number === 2) secondWaveTimes.push(now);
    run.maxAttempts = Math.max(run.maxAttempts, a.number);
    const result = http.decide(arrival);
    if (result === undefined || result instanceof Promise)
      throw new Error('simulate: the HTTP layer answered asynchronously; expected a synchronous memory store');
    // The headers the middleware writes on this answer: what the client reads.
    const headers = new Fields();
    http.response.headers.write(FIELDS, headers, result, true);
    const reports = partitionReports(headers, now);
    if (ticket !== undefined) books.get(a.client)!.answer(ticket, reports, now);
    if (!result.allowed && informed[a.client] === 1) run.deniedInformed++;
    if (reports.length > 0) informed[a.client] = 1;
    if (result.allowed) {
      run.admitted++;
      run.lastThrough = Math.max(run.lastThrough ?? -Infinity, now + result.delayMs);
      return;
    }
    run.denied++;
    // The naive client reads nothing: it goes again at once.
    const serverWaitMs = retry === 'immediate' ? 0 : serverWait(retryAfterMs(headers.get('retry-after'), now), reports);
    const step = nextStep(
      policy,
      { attempts: a.number, elapsedMs: now - a.start, replayable: true },
      { status: result.statusCode, serverWaitMs },
      random(),
    );
    if (!step.retry) {
      run.gaveUp++;
      return;
    }
    events.push({ at: now + step.waitMs, seq: seq++, attempt: { ...a, number: a.number + 1 } });
  };

  /**
   * `@rl/client`'s gate pass for `client`'s queue: the waiters the book lets on go out in order (all
   * admitted before any answer, as requests in flight are); their answers come back at once, and the
   * queue is looked at again, as the gate does on an answer; then its timer is set for the rest.
   */
  const pump = (client: number): void => {
    for (;;) {
      const queue = queues.get(client);
      if (queue === undefined) return;
      const { passed, wakeAt: wake } = passWaiters(books.get(client)!, SCOPE, queue, now);
      for (const { waiter, ticket } of passed) {
        if (now > waiter.arrived) run.held++;
        send(waiter.attempt, ticket);
      }
      if (queue.length === 0) {
        queues.delete(client);
        return;
      }
      if (passed.length > 0) continue;
      // The gate's timer fires no sooner than 1 ms on (setTimeout's least).
      const at = Math.max(wake, now + 1);
      if (at === Infinity || wakeAt.get(client) === at) return;
      wakeAt.set(client, at);
      events.push({ at, seq: seq++, wake: client });
      return;
    }
  };

  /** Through the client's pacing gate (`paced`), or straight out. */
  const attempt = (a: Attempt): void => {
    if (retry !== 'paced') return send(a, undefined);
    let book = books.get(a.client);
    if (book === undefined) books.set(a.client, (book = new PacingBook()));
    const maxWaitMs = Math.min(policy.maxRetryAfterMs, policy.maxElapsedMs - (now - a.start));
    if (!queues.has(a.client)) {
      const admission = book.admit(SCOPE, ROUTE, now, maxWaitMs <= 0);
      if (admission.go) return send(a, admission.ticket);
    }
    const waiter = { route: ROUTE, attempt: a, arrived: now, deadline: now + Math.max(0, Math.floor(maxWaitMs)) };
    const queue = queues.get(a.client);
    if (queue === undefined) queues.set(a.client, [waiter]);
    else queue.push(waiter);
    pump(a.client);
  };

  let next = 0;
  for (;;) {
    const queued = events.peek();
    // The traffic's arrivals go before retries and timers of the same instant (their seq is lower).
    if (next < n && (queued === undefined || traffic.times[next]! <= queued.at)) {
      now = traffic.times[next]!;
      attempt({ request: next, client: next % o.clients, number: 1, start: now });
      next++;
      continue;
    }
    if (queued === undefined) break;
    events.pop();
    now = queued.at;
    if (queued.attempt !== undefined) attempt(queued.attempt);
    else if (wakeAt.get(queued.wake!) === queued.at) {
      wakeAt.delete(queued.wake!);
      pump(queued.wake!);
    }
  }
  void store.close?.();
  const attempts = builder.build();
  return {
    ...run,
    attempts,
    lastMs: attempts.times.length === 0 ? now : attempts.times[attempts.times.length - 1]!,
    retryTimes,
    secondWaveTimes,
  };
}

/** An answer's header fields by lower-case name: what `partitionReports` reads, cheaper than a `Headers`. */
class Fields {
  private readonly values = new Map<string, string>();

  get(name: string): string | null {
    return this.values.get(name.toLowerCase()) ?? null;
  }

  set(name: string, value: string): void {
    this.values.set(name.toLowerCase(), value);
  }
}

/** How the middleware's header writer writes on {@link Fields}. */
const FIELDS: HeaderAccess<Fields> = {
  get: (fields, name) => fields.get(name) ?? undefined,
  set: (fields, name, value) => fields.set(name, value),
};

/** Events by time, then `seq`. */
function eventQueue(): MinHeap<Event> {
  return new MinHeap<Event>((a, b) => a.at < b.at || (a.at === b.at && a.seq < b.seq));
}

/** The replayed report with the clients' figures, its slices padded to the run's `sliceCount`. */
function withClients(report: LimitReport, sliceCount: number, clients: ClientStats): LimitReport {
  const pad = (series: readonly number[]) =>
    series.length >= sliceCount ? series : [...series, ...new Array<number>(sliceCount - series.length).fill(0)];
  const { admitted, delayed, denied, keys } = report.slices;
  return {
    ...report,
    slices: {
      admitted: pad(admitted),
      delayed: pad(delayed),
      denied: pad(denied),
      ...(keys && {
        keys: keys.map((k) => ({ ...k, admitted: pad(k.admitted), delayed: pad(k.delayed), denied: pad(k.denied) })),
      }),
    },
    clients,
  };
}
