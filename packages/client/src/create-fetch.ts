import { parseClientOptions, type ClientConfig, type CreateFetchOptions } from './options.js';
import { tell } from './observer.js';
import { PacingBook, type PacingTicket } from './pacing-book.js';
import { PacingGate } from './pacing-gate.js';
import { partitionReports, type PartitionReport } from './ratelimit-fields.js';
import { retryAfterMs } from './retry-after.js';
import { nextStep, outrankedReports, SAFE_METHODS, serverWait, type AttemptOutcome } from './retry-policy.js';
import { wait } from './wait.js';

/** fetch's signature: what {@link createFetch} returns. */
export type FetchFunction = (input: Request | string | URL, init?: RequestInit) => Promise<Response>;

/** One attempt's result: its response, or the network error it ended on. */
type Sent = { readonly ok: true; readonly response: Response } | { readonly ok: false; readonly error: unknown };

/**
 * A fetch that waits out rate limits: it retries 429, 503 (and 408, 502, 504, and network errors)
 * after the server's `Retry-After` (else the RateLimit `t`) plus jitter, within `retries` and
 * `maxElapsed`; it returns at once a response whose wait is past `maxRetryAfter`. Only safe methods
 * are retried, or an unsafe one with an `Idempotency-Key` (`idempotencyKey: 'auto'` adds one). With
 * `pacing` (the default) it reads the RateLimit fields of every response, and a request to a
 * partition the server reported empty waits for its reset instead of drawing a 429; the calls of one
 * client share that state.
 *
 * Options are checked here, once (`InvalidOptionError`, `code: 'RL_INVALID_OPTION'`). The returned
 * function resolves with the last response, or rejects with the last network error, or with the
 * request signal's reason when it aborts (waiting included). No `node:` import: any runtime with
 * fetch.
 */
export function createFetch(options: CreateFetchOptions = {}): FetchFunction {
  const config = parseClientOptions(options);
  const gate = config.pacing ? new PacingGate(new PacingBook(), config.timers) : undefined;
  return async (input, init) => send(config, gate, new Request(input, init), runtimeInit(init));
}

/** The members of `RequestInit` that a `Request` keeps: any other is the runtime's own (see {@link runtimeInit}). */
const REQUEST_INIT_MEMBERS = new Set([
  'method',
  'headers',
  'body',
  'referrer',
  'referrerPolicy',
  'mode',
  'credentials',
  'cache',
  'redirect',
  'integrity',
  'keepalive',
  'signal',
  'duplex',
  'priority',
  'window',
]);

/**
 * The members of `init` that a `Request` drops, given again with each attempt: a runtime's own
 * extensions of fetch (Node's `dispatcher` for a proxy, a socket or TLS options; Cloudflare's `cf`;
 * Bun's `proxy`, `tls`, `unix`), which a plain `fetch(url, init)` honours. Undefined when there are none.
 */
function runtimeInit(init: RequestInit | undefined): RequestInit | undefined {
  if (init === undefined || init === null) return undefined;
  let extra: Record<string, unknown> | undefined;
  for (const name of Object.keys(init)) {
    if (!REQUEST_INIT_MEMBERS.has(name)) (extra ??= {})[name] = (init as Record<string, unknown>)[name];
  }
  return extra as RequestInit | undefined;
}

/** One logical request: its attempts, and the waits between them. */
async function send(
  config: ClientConfig,
  gate: PacingGate | undefined,
  request: Request,
  extra: RequestInit | undefined,
): Promise<Response> {
  const { timers, policy, observer } = config;
  const method = request.method;
  if (config.idempotencyKey !== undefined && !SAFE_METHODS.has(method) && !request.headers.has('idempotency-key'))
    request.headers.set('Idempotency-Key', config.idempotencyKey());
  const replayable = SAFE_METHODS.has(method) || request.headers.has('idempotency-key');
  const url = request.url;
  const parsed = gate === undefined ? undefined : new URL(url);
  const scope = parsed === undefined ? '' : config.scope(parsed);
  // What the pacing book tells a route by: a limit on one route must not hold the others (see PacingBook).
  const route = parsed === undefined ? '' : `${method} ${parsed.pathname}`;
  const start = timers.now();
  for (let attempts = 1; ; attempts++) {
    const ticket = gate === undefined ? undefined : await enterGate(config, gate, request, { scope, route, start });
    const sent = await attempt(config, request, extra);
    const fields = sent.ok ? sent.response.headers : undefined;
    let reports: readonly PartitionReport[] = [];
    let retryAfter: number | undefined;
    try {
      const wallNow = config.clock();
      if (fields !== undefined) {
        retryAfter = retryAfterMs(fields.get('retry-after'), wallNow);
        reports = outrankedReports(partitionReports(fields, wallNow), retryAfter);
      }
    } finally {
      // Answered whatever happens (the user's clock may throw): a ticket left out would hold its scope.
      if (ticket !== undefined) gate!.answer(ticket, reports);
    }
    if (!sent.ok && (request.signal.aborted || !(sent.error instanceof TypeError))) throw sent.error;
    const outcome: AttemptOutcome = {
      status: sent.ok ? sent.response.status : undefined,
      serverWaitMs: fields === undefined ? undefined : serverWait(retryAfter, reports),
    };
    const elapsedMs = timers.now() - start;
    const step = nextStep(policy, { attempts, elapsedMs, replayable }, outcome, draw(config.random));
    if (!step.retry) {
      if (step.reason !== 'final')
        tell(observer.onGiveUp, observer, {
          method,
          url,
          attempts,
          status: outcome.status,
          reason: step.reason,
          elapsedMs,
        });
      if (!sent.ok) throw sent.error;
      return sent.response;
    }
    tell(observer.onRetry, observer, {
      method,
      url,
      attempt: attempts,
      status: outcome.status,
      waitMs: step.waitMs,
      serverWaitMs: step.serverWaitMs,
    });
    if (sent.ok) await sent.response.body?.cancel().catch(() => undefined);
    await wait(timers, step.waitMs, request.signal);
  }
}

/** Sends one attempt: a clone of the request, so that its body can be sent again, with the runtime's own members of its init (`extra`). */
async function attempt(config: ClientConfig, request: Request, extra: RequestInit | undefined): Promise<Sent> {
  try {
    return { ok: true, response: await config.fetch(request.clone(), extra) };
  } catch (error) {
    return { ok: false, error };
  }
}

/** Waits at the pacing gate (at most `maxRetryAfter`, and not past `maxElapsed`), telling the observer of a wait. */
async function enterGate(
  config: ClientConfig,
  gate: PacingGate,
  request: Request,
  { scope, route, start }: { scope: string; route: string; start: number },
): Promise<PacingTicket> {
  const { timers, policy, observer } = config;
  const maxWaitMs = Math.min(policy.maxRetryAfterMs, policy.maxElapsedMs - (timers.now() - start));
  const { ticket, heldMs } = await gate.enter(scope, route, maxWaitMs, request.signal);
  if (heldMs > 0) tell(observer.onPaced, observer, { method: request.method, url: request.url, waitMs: heldMs });
  return ticket;
}

/** One draw of the random source, held to [0, 1) whatever it returns. */
function draw(random: () => number): number {
  const r = random();
  return r >= 0 && r < 1 ? r : 0;
}
