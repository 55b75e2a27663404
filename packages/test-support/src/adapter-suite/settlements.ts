import { createLimiter, fixedWindow, type Store } from '@rl/core';
import { expect, it, onTestFinished, vi, type MockInstance } from 'vitest';
import { members } from '../http-client.js';
import { T0, type SuiteContext } from './context.js';

/** The `r` of the RateLimit member `name` (the only one when undefined). */
function remainingOf(header: string | string[] | undefined, name?: string): number | undefined {
  const all = members(header);
  return (name === undefined ? all[0] : all.find((m) => m.name === name))?.params.r as number | undefined;
}

/** Waits until the store's `settle` has been called `times` times, and until those settles are done. */
async function settled(settle: MockInstance, times: number): Promise<void> {
  await vi.waitFor(() => expect(settle).toHaveBeenCalledTimes(times));
  await Promise.all(settle.mock.results.map((result) => result.value as unknown));
}

/**
 * The process warnings that are Errors from a failed `actualCost` (see `warnLateError`), collected
 * and not printed until the end of the calling test (a passing run stays quiet); other warnings go on as usual.
 */
function lateErrorWarnings(): readonly Error[] {
  const errors: Error[] = [];
  const emit = process.emitWarning.bind(process) as (...args: unknown[]) => void;
  const spy = vi.spyOn(process, 'emitWarning').mockImplementation(((warning: string | Error, ...rest: unknown[]) => {
    if (warning instanceof Error && warning.message.startsWith('actualCost failed')) errors.push(warning);
    else emit(warning, ...rest);
  }) as typeof process.emitWarning);
  onTestFinished(() => spy.mockRestore());
  return errors;
}

/**
 * Charging from the response (`actualCost`, and the handler's `result.settle(n)`): the estimate
 * (`cost`) is charged on arrival, the difference once the response has finished, in one store call.
 */
export function settlementTests(t: SuiteContext): void {
  const hourly = fixedWindow({ limit: 100, window: '1h' });
  const peek = (prefix: string, key: string) =>
    createLimiter({ algorithm: hourly, store: t.store, clock: () => T0, prefix }).peek(key);
  const spySettle = () => vi.spyOn(t.store as Required<Store>, 'settle');
  const tokens = (...args: unknown[]) => Number(t.adapter.responseHeader(args, 'x-tokens'));
  /** The middleware of ann's requests under `prefix`, each charged an estimate of 10 units of {@link hourly}. */
  const annEstimated10 = (prefix: string) => ({ algorithm: hourly, key: () => 'ann', prefix, cost: 10 });

  it('actualCost reads the cost from a response header the handler set: estimate 10, actual 35 moves the counter by 35', async () => {
    const settle = spySettle();
    const app = await t.open({
      middlewares: [{ ...annEstimated10('tokens'), actualCost: tokens }],
      handler: () => ({ headers: { 'x-tokens': '35' } }),
    });
    const first = await app.request('/');
    expect([first.status, first.headers['x-tokens'], remainingOf(first.headers['ratelimit'])]).toEqual([200, '35', 90]);
    await settled(settle, 1);
    expect((await peek('tokens', 'ann')).remaining).toBe(65);
    // The next request's headers count it: 65 less its own estimate of 10.
    expect(remainingOf((await app.request('/')).headers['ratelimit'])).toBe(55);
  });

  it('the handler settles through the request result (settle(3)), and actualCost is then not called', async () => {
    const settle = spySettle();
    const actualCost = vi.fn(tokens);
    const app = await t.open({
      middlewares: [{ ...annEstimated10('early'), actualCost }],
      handler: (request) => (request.rateLimit as { settle(n: number): Promise<void> }).settle(3),
    });
    expect((await app.request('/')).status).toBe(200);
    await settled(settle, 1);
    expect((await peek('early', 'ann')).remaining).toBe(97);
    expect(actualCost).not.toHaveBeenCalled();
  });

  it('a bad actual cost from the handler goes to the error path (500), and the estimate stands', async () => {
    const app = await t.open({
      middlewares: [annEstimated10('bad')],
      handler: (request) => (request.rateLimit as { settle(n: number): Promise<void> }).settle(-1),
    });
    const res = await app.request('/');
    expect([res.status, (res.body as { code?: string }).code]).toEqual([500, 'RL_INVALID_COST']);
    expect((await peek('bad', 'ann')).remaining).toBe(90);
  });

  it('with limits: a request limit of cost 1 and a token limit with actualCost; only the token limit moves', async () => {
    const settle = spySettle();
    const app = await t.open({
      middlewares: [
        {
          key: () => 'ann',
          prefix: 'mixed',
          limits: [
            { name: 'requests', algorithm: hourly, cost: 1 },
            { name: 'tokens', algorithm: hourly, cost: 20, actualCost: tokens },
          ],
        },
      ],
      handler: () => ({ headers: { 'x-tokens': '5' } }),
    });
    await app.request('/');
    await settled(settle, 1);
    expect((await peek('mixed:requests', 'ann')).remaining).toBe(99);
    expect((await peek('mixed:tokens', 'ann')).remaining).toBe(95);
  });

  it('with skipFailedRequests: a failed response gives its estimate back and is not settled; a success is settled', async () => {
    const settle = spySettle();
    const undo = vi.spyOn(t.store, 'giveBack');
    const app = await t.open({
      middlewares: [{ ...annEstimated10('failed'), actualCost: tokens, skipFailedRequests: true }],
      handler: (request) => ({
        status: request.header('x-fail') === undefined ? 200 : 502,
        headers: { 'x-tokens': '40' },
      }),
    });
    expect((await app.request('/', { headers: { 'x-fail': '1' } })).status).toBe(502);
    await vi.waitFor(() => expect(undo).toHaveBeenCalledTimes(1));
    await Promise.all(undo.mock.results.map((result) => result.value as unknown));
    expect((await peek('failed', 'ann')).remaining).toBe(100);
    expect((await app.request('/')).status).toBe(200);
    await settled(settle, 1);
    expect((await peek('failed', 'ann')).remaining).toBe(60);
  });

  it('an actualCost that throws something that is not an Error is reported as an Error, and the server keeps serving', async () => {
    const reported = lateErrorWarnings();
    const app = await t.open({
      middlewares: [
        {
          ...annEstimated10('thrown'),
          actualCost: () => {
            throw 'down';
          },
        },
      ],
    });
    expect((await app.request('/')).status).toBe(200);
    expect((await app.request('/')).status).toBe(200);
    expect((await peek('thrown', 'ann')).remaining).toBe(80);
    // Where the framework has no path of its own for it, each failure is a process warning carrying the Error.
    const expected =
      t.adapter.lateErrorsAsWarnings === true ? ['actualCost failed: down', 'actualCost failed: down'] : [];
    await vi.waitFor(() => expect(reported.map((error) => error.message)).toEqual(expected));
  });
}
