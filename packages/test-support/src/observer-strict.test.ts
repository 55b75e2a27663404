/**
 * An `async` observer that rejects never ends the process (issue 25): the limiter runs in a Node of
 * its own with `--unhandled-rejections=strict` (an unhandled rejection ends it at once), and every
 * rejection comes back as one `RL_OBSERVER_ERROR` warning per observer object.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tsLoaderRegistration } from './ts-loader.js';

const WORKER = fileURLToPath(new URL('./observer-strict-worker.ts', import.meta.url));

describe('an observer that rejects, under --unhandled-rejections=strict', () => {
  it('the process survives decisions, store errors and circuit changes, and each observer is reported once', () => {
    const output = execFileSync(process.execPath, ['--unhandled-rejections=strict', '--import', tsLoaderRegistration, WORKER], { encoding: 'utf8', timeout: 30_000 });
    const report = JSON.parse(output.trim().split('\n').at(-1)!) as { survived: boolean; codes: string[] };
    expect(report).toEqual({ survived: true, codes: ['RL_OBSERVER_ERROR', 'RL_OBSERVER_ERROR'] });
  });
});
