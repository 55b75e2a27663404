/**
 * An `async` observer that rejects never ends the process (issue 25): the limiter runs in a Node of
 * its own with `--unhandled-rejections=strict` (an unhandled rejection ends it at once), and every
 * rejection comes back as one `RL_OBSERVER_ERROR` warning per observer object.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { useWorkerScript } from './worker-script.js';

const worker = useWorkerScript(fileURLToPath(new URL('./observer-strict-worker.ts', import.meta.url)));

describe('an observer that rejects, under --unhandled-rejections=strict', () => {
  it('the process survives decisions, store errors and circuit changes, and each observer is reported once', () => {
    // Its stderr is read here, not passed on: the warnings it prints are what the test is about.
    const run = spawnSync(process.execPath, ['--unhandled-rejections=strict', worker.path], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect([run.status, run.signal]).toEqual([0, null]);
    const report = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as { survived: boolean; codes: string[] };
    expect(report).toEqual({ survived: true, codes: ['RL_OBSERVER_ERROR', 'RL_OBSERVER_ERROR'] });
    // What Node printed: the two warnings, one per observer (the decision's, the circuit's), and nothing else but its hint.
    const printed = run.stderr.split('\n').filter((line) => /^\(node:\d+\) /.test(line));
    expect(printed.map((line) => line.replace(/^\(node:\d+\) /, '').replace(/\);.*$/, ')'))).toEqual([
      '[RL_OBSERVER_ERROR] Warning: An rl observer threw (decision observer down)',
      '[RL_OBSERVER_ERROR] Warning: An rl observer threw (circuit observer down)',
    ]);
  });
});
