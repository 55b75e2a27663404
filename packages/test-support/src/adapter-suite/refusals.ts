import { expect } from 'vitest';
import type { MountedApp } from './adapter.js';

/** The `code` a 500 answer's JSON body may carry. */
interface TestResponseCode {
  readonly code?: unknown;
}

/**
 * For an adapter that answers a request rl refuses to decide (a bad key or cost, an RL_* error) with
 * a 500 of its own and warns the error (`Adapter.refusalsAsWarnings`: the Fetch handler): while a test
 * runs, those warnings are collected, not printed (a passing run stays quiet), and the 500 answers
 * of its apps are noted; at its end each warning must be about a request answered 500 with its code.
 * Other warnings go on as usual. `process.emitWarning` is replaced by a plain wrapper for the test,
 * not a spy: a test's own spy on it (`captureWarnings`) wraps this one and is restored first.
 */
export class Refusals {
  private readonly warned: string[] = [];
  private readonly answered = new Set<string>();
  private readonly original = process.emitWarning;

  constructor() {
    const original = this.original;
    process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
      const code = (warning as { code?: unknown }).code;
      if (warning instanceof Error && rest.length === 0 && typeof code === 'string' && code.startsWith('RL_'))
        this.warned.push(code);
      else (original as (...args: unknown[]) => void).call(process, warning, ...rest);
    }) as typeof process.emitWarning;
  }

  /** `app`, its answers noted. */
  watch(app: MountedApp): MountedApp {
    const request: MountedApp['request'] = async (path, init) => {
      const res = await app.request(path, init);
      const code = (res.body as TestResponseCode | null | undefined)?.code;
      if (res.status === 500 && typeof code === 'string') this.answered.add(code);
      return res;
    };
    return Object.assign(Object.create(app) as MountedApp, { request });
  }

  /** Puts `process.emitWarning` back, then checks every warning was about a refused request. */
  end(): void {
    process.emitWarning = this.original;
    expect(
      this.warned.filter((code) => !this.answered.has(code)),
      'warnings of refusals no request was answered with',
    ).toEqual([]);
  }
}
