/**
 * The check at the end of a test run (global-setup.ts), on real processes: a launcher that leaves its
 * runtime behind (`sh -c 'sleep … &'`: the shell exits, the sleep is reparented), a process working in
 * the run's temporary directory, a folder left there.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startRunCheck } from './global-setup.js';
import { canListProcesses, killProcesses, processesWith, runnerWorkers, TEST_RUN_VARIABLE } from './leftovers.js';

/** Starts `sleep <seconds>` behind a shell that exits at once (the sleep is reparented); its pid. */
function leaveBehind(seconds: number, options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): number {
  const launcher = spawnSync('sh', ['-c', `sleep ${seconds} > /dev/null 2>&1 & echo $!`], {
    encoding: 'utf8',
    ...options,
  });
  return Number(launcher.stdout.trim());
}

/** True while `pid` runs (a zombie, killed and not yet reaped, does not). */
function running(pid: number): boolean {
  try {
    return (
      spawnSync('ps', ['-o', 'stat=', '-p', String(pid)], { encoding: 'utf8' })
        .stdout.trim()
        .replace(/^Z.*/, '') !== ''
    );
  } catch {
    return false;
  }
}

describe.skipIf(!canListProcesses())(
  `the check at the end of a run${canListProcesses() ? '' : ' (skipped: it reads /proc)'}`,
  () => {
    const exitCode = process.exitCode;
    const started: number[] = [];
    afterEach(() => {
      process.exitCode = exitCode;
      killProcesses(started.splice(0).map((pid) => ({ pid, ppid: 0, command: '' })));
    });

    it('a run that leaves nothing passes, writes nothing, removes its folder and gives the environment back', async () => {
      const before = { TMPDIR: process.env.TMPDIR, mark: process.env[TEST_RUN_VARIABLE] };
      let written = '';
      const check = startRunCheck({ write: (text) => (written += text), settleMs: 200 });
      const dir = process.env.TMPDIR!;
      expect([tmpdir(), process.env[TEST_RUN_VARIABLE]]).toEqual([dir, expect.stringMatching(/^[0-9a-f-]{36}$/)]);
      // tsx's compile cache is kept in the temporary directory by design: not a leftover.
      mkdirSync(join(dir, `tsx-${userInfo().uid}`));
      expect(await check()).toEqual({ processes: [], entries: [] });
      expect([written, process.exitCode, existsSync(dir)]).toEqual(['', exitCode, false]);
      expect({ TMPDIR: process.env.TMPDIR, mark: process.env[TEST_RUN_VARIABLE] }).toEqual(before);
    });

    it("fails on a runtime left behind its launcher, a process working in the run's folder and a folder; names, stops and removes them", async () => {
      let written = '';
      const check = startRunCheck({ write: (text) => (written += text), settleMs: 200 });
      const dir = process.env.TMPDIR!;
      const id = process.env[TEST_RUN_VARIABLE]!;
      // Marked by the environment it inherits.
      const runtime = leaveBehind(30);
      // Working in the run's folder, without the mark (as redis-server, which overwrites its environment).
      const server = leaveBehind(30, {
        cwd: mkdtempSync(join(tmpdir(), 'rl-redis-')),
        env: { PATH: process.env.PATH },
      });
      started.push(runtime, server);
      const left = await check();
      expect(left.processes.map((p) => p.pid).sort()).toEqual([runtime, server].sort());
      expect(left.processes.every((p) => p.ppid !== process.pid && p.command === 'sleep 30')).toBe(true);
      expect(left.entries).toEqual([expect.stringMatching(/^rl-redis-/)]);
      expect(process.exitCode).toBe(1);
      expect(written).toContain(
        `The tests left 2 processes running and 1 entry in their temporary directory (${dir}):`,
      );
      expect(written).toContain(`  process ${runtime} (parent `);
      expect(written).toContain(`  ${join(dir, left.entries[0]!)}\n`);
      expect(existsSync(dir)).toBe(false);
      await vi.waitFor(() => expect([running(runtime), running(server)]).toEqual([false, false]));
      expect(processesWith(TEST_RUN_VARIABLE, id)).toEqual([]);
    });

    it("the runner's workers are its children running vitest's worker entry: this test's process is one", () => {
      expect(runnerWorkers(process.ppid).map((p) => p.pid)).toContain(process.pid);
      expect(runnerWorkers(process.pid)).toEqual([]);
    });

    it("counts neither another run's processes nor the runner's own children, and waits for what is ending", async () => {
      const check = startRunCheck({ write: () => {}, settleMs: 3_000 });
      const other = leaveBehind(30, { env: { ...process.env, [TEST_RUN_VARIABLE]: 'another-run' } });
      // A child of the runner (vitest's workers and services are), and a process that ends by itself soon.
      const child = spawn('sleep', ['30'], { stdio: 'ignore' });
      const ending = leaveBehind(0.3);
      started.push(other, child.pid!, ending);
      expect(await check()).toEqual({ processes: [], entries: [] });
      expect(process.exitCode).toBe(exitCode);
      expect(running(other)).toBe(true);
    });
  },
);
