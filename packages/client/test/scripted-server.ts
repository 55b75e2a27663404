import type { FakeTimers } from '@rl/core/testing';

/** One answer of a scripted server: a status and its fields. */
export interface ScriptedAnswer {
  readonly status: number;
  readonly fields?: Record<string, string>;
}

/** An attempt as a scripted server saw it. */
export interface SeenAttempt {
  /** The virtual time it arrived (the timers' milliseconds). */
  readonly at: number;
  readonly method: string;
  readonly idempotencyKey: string | null;
  readonly body: string;
}

/**
 * A fetch that answers from a script, on fake timers, and records what it saw: the server of the
 * client's unit tests. Past the script's end it answers 200; an answer `'network'` rejects as fetch
 * does on a network error (a TypeError).
 */
export function scriptedServer(timers: FakeTimers, script: readonly (ScriptedAnswer | 'network')[]) {
  const seen: SeenAttempt[] = [];
  const fetch = async (request: Request): Promise<Response> => {
    seen.push({
      at: timers.now(),
      method: request.method,
      idempotencyKey: request.headers.get('idempotency-key'),
      body: await request.text(),
    });
    const answer = script[seen.length - 1] ?? { status: 200 };
    if (answer === 'network') throw new TypeError('fetch failed');
    return new Response(answer.status === 204 ? null : 'body', { status: answer.status, headers: answer.fields });
  };
  return { fetch, seen };
}

/** Advances `timers` until `promise` settles (at most `limitMs` of virtual time), and returns its outcome. */
export async function settle<T>(
  timers: FakeTimers,
  promise: Promise<T>,
  limitMs = 600_000,
): Promise<{ value?: T; error?: unknown }> {
  let outcome: { value?: T; error?: unknown } | undefined;
  promise.then(
    (value) => (outcome = { value }),
    (error: unknown) => (outcome = { error }),
  );
  await timers.advanceAsync(0); // the calls begun so far reach the server at the present time
  for (let t = 0; outcome === undefined && t < limitMs; t += 100) await timers.advanceAsync(100);
  if (outcome === undefined) throw new Error(`still pending after ${limitMs} ms of virtual time`);
  return outcome;
}
