import { FakeTimers } from '@rl/core/testing';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createFetch } from './create-fetch.js';
import { nextStep, type RetryPolicy } from './retry-policy.js';

/** A field value, and the wait it truly asks for (undefined: none, it is malformed), given the wall time it is read at. */
interface Field {
  readonly text: (wall: number) => string;
  readonly truth: (wall: number) => number | undefined;
}

const delta = fc.integer({ min: 0, max: 120 }).map((s): Field => ({ text: () => String(s), truth: () => s * 1000 }));
/** An HTTP-date `s` seconds from the wall time (past or future), as a server on a skewed clock writes it. */
const date = fc.integer({ min: -30, max: 120 }).map((s): Field => ({
  text: (wall) => new Date(wall + s * 1000).toUTCString(),
  truth: (wall) => Math.max(0, Math.floor((wall + s * 1000) / 1000) * 1000 - wall),
}));
const malformed = fc
  .constantFrom('-1', '1.5', '', 'soon', '5, 7', '99999999999', '1e2', 'Wed, 21 Oct 2026 07:28:00 GMT, 5', '0x10')
  .map((text): Field => ({ text: () => text, truth: () => undefined }));
const retryAfter = fc.option(fc.oneof(delta, date, malformed), { nil: undefined });
/** A RateLimit field: an empty partition with its t (the wait when Retry-After gives none), or noise. */
const rateLimit = fc.option(
  fc.oneof(
    fc.integer({ min: 0, max: 120 }).map((t) => ({ text: `"p";r=0;t=${t}`, truth: t * 1000 })),
    fc
      .constantFrom('"p";r=3;t=9', '"p";r=0;t=-4', '"p";r=0;t=1, "p";r=0;t=90', 'garbage;;', '"p";r=0;t=99999999999')
      .map((text) => ({ text, truth: undefined })),
  ),
  { nil: undefined },
);
const answer = fc.record({ status: fc.constantFrom(200, 404, 429, 429, 503, 503, 502), retryAfter, rateLimit });

describe('bounds over random answers, clocks and options', () => {
  it("never more than retries + 1 attempts, no wait past maxElapsed, no attempt before the server's time", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(answer, { minLength: 1, maxLength: 8 }),
        fc.record({
          retries: fc.integer({ min: 0, max: 6 }),
          maxElapsedS: fc.integer({ min: 1, max: 300 }),
          maxRetryAfterS: fc.integer({ min: 1, max: 120 }),
          start: fc.integer({ min: 0, max: 1e9 }),
          wall: fc.integer({ min: 1e12, max: 2e12 }),
          pacing: fc.boolean(),
        }),
        fc.infiniteStream(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true })),
        async (answers, o, draws) => {
          const timers = new FakeTimers(o.start);
          const wallNow = () => o.wall + timers.now() - o.start;
          const sent: { at: number; earliest: number }[] = [];
          let earliest = -Infinity;
          const server = async (): Promise<Response> => {
            const at = timers.now();
            sent.push({ at, earliest });
            const a = answers[Math.min(sent.length, answers.length) - 1]!;
            const fields: Record<string, string> = {};
            if (a.retryAfter) fields['retry-after'] = a.retryAfter.text(wallNow());
            if (a.rateLimit) fields.ratelimit = a.rateLimit.text;
            // The server's time: its valid Retry-After, else its valid t of an empty partition.
            const truth = a.retryAfter?.truth(wallNow()) ?? a.rateLimit?.truth;
            earliest = truth === undefined ? -Infinity : at + truth;
            return new Response(null, { status: a.status, headers: fields });
          };
          const client = createFetch({
            fetch: server,
            timers,
            clock: wallNow,
            random: () => draws.next().value,
            retries: o.retries,
            maxElapsed: o.maxElapsedS * 1000,
            maxRetryAfter: o.maxRetryAfterS * 1000,
            pacing: o.pacing,
          });
          let done = false;
          const response = client('https://api.example.com/').finally(() => (done = true));
          for (let i = 0; !done && i < 4_000; i++) await timers.advanceAsync(100);
          expect(done).toBe(true);
          expect((await response).status).toBeGreaterThan(0);
          expect(sent.length).toBeLessThanOrEqual(o.retries + 1);
          expect(sent.at(-1)!.at - o.start).toBeLessThanOrEqual(o.maxElapsedS * 1000);
          for (const s of sent) expect(s.at).toBeGreaterThanOrEqual(s.earliest);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('nextStep', () => {
  const policy: RetryPolicy = {
    retries: 3,
    maxElapsedMs: 60_000,
    maxRetryAfterMs: 30_000,
    jitterMs: 1000,
    backoffMs: 500,
  };

  it('never waits less than the server asks, nor past maxElapsed, nor retries past the bounds', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10 }),
        fc.integer({ min: 0, max: 90_000 }),
        fc.option(fc.integer({ min: 0, max: 60_000 }), { nil: undefined }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (attempts, elapsedMs, serverWaitMs, random) => {
          const step = nextStep(
            policy,
            { attempts, elapsedMs, replayable: true },
            { status: 429, serverWaitMs },
            random,
          );
          if (!step.retry) return;
          expect(attempts).toBeLessThanOrEqual(policy.retries);
          expect(elapsedMs + step.waitMs).toBeLessThanOrEqual(policy.maxElapsedMs);
          if (serverWaitMs !== undefined) {
            expect(serverWaitMs).toBeLessThanOrEqual(policy.maxRetryAfterMs);
            expect(step.waitMs).toBeGreaterThanOrEqual(serverWaitMs);
            expect(step.waitMs).toBeLessThanOrEqual(Math.ceil(serverWaitMs + policy.jitterMs));
            expect(step.waitMs).toBeLessThanOrEqual(Math.max(Math.ceil(serverWaitMs), policy.maxRetryAfterMs));
          }
        },
      ),
    );
  });

  it.each([
    [200, true, 1, 'final'],
    [404, true, 1, 'final'],
    [429, false, 1, 'not-replayable'],
    [undefined, false, 1, 'not-replayable'],
    [503, true, 4, 'retries'],
  ] as const)('status %s, replayable %s, attempt %s: stops (%s)', (status, replayable, attempts, reason) => {
    expect(nextStep(policy, { attempts, elapsedMs: 0, replayable }, { status, serverWaitMs: 1000 }, 0)).toEqual({
      retry: false,
      reason,
    });
  });
});
