import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { TEST_RUN_VARIABLE } from './leftovers.js';
import { installPrivate } from './private-install.js';

/** A folder whose frozen install fails without the network: its lockfile does not name its dependency. */
function outdatedFolder(dir: string): void {
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ private: true, dependencies: { 'left-pad': '1.3.0' } }));
  writeFileSync(join(dir, 'pnpm-lock.yaml'), "lockfileVersion: '9.0'\n");
}

describe('installPrivate', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'rl-private-install-'));
    outdatedFolder(dir);
  });
  // Each test is a test run of its own (an install that failed is tried again in the next run only).
  beforeEach(() => {
    vi.stubEnv(TEST_RUN_VARIABLE, `${process.env[TEST_RUN_VARIABLE] ?? 'run'}-${Math.random()}`);
    return () => vi.unstubAllEnvs();
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('says why it could not install (pnpm’s error line), and leaves no stamp nor lock', async () => {
    const reason = await installPrivate({ dir, label: 'the thing' });
    expect(reason).toMatch(/^the thing could not be installed into .*: npx -y pnpm@9\.15\.9 install .* exited 1: /);
    expect(reason).toContain('OUTDATED_LOCKFILE');
    expect(() => readFileSync(join(dir, 'node_modules', '.rl-private-install'))).toThrow();
    expect(() => readFileSync(join(dir, '.rl-install-lock', 'owner'))).toThrow();
  }, 60_000);

  it('tries once a test run: its other files get the same reason, another run tries again', async () => {
    const reason = await installPrivate({ dir, label: 'the thing' });
    expect(reason).toMatch(/exited 1/);
    // Without npx on the PATH, a try would say it did not start.
    vi.stubEnv('PATH', '');
    try {
      expect(await installPrivate({ dir, label: 'the thing' })).toBe(reason);
      vi.stubEnv(TEST_RUN_VARIABLE, `${process.env[TEST_RUN_VARIABLE]}-next`);
      expect(await installPrivate({ dir, label: 'the thing' })).toMatch(/did not start \(spawn npx ENOENT\)$/);
    } finally {
      vi.unstubAllEnvs();
    }
  }, 60_000);

  it('installs nothing when the stamp of the same package.json and lockfile stands', async () => {
    await installPrivate({ dir, label: 'the thing' }).then((reason) => expect(reason).toBeDefined());
    // The stamp an install of these files writes: with it, the (failing) install is not run again.
    const { createHash } = await import('node:crypto');
    const hash = createHash('sha256');
    for (const file of ['package.json', 'pnpm-lock.yaml']) hash.update(readFileSync(join(dir, file)));
    mkdirSync(join(dir, 'node_modules'), { recursive: true });
    writeFileSync(join(dir, 'node_modules', '.rl-private-install'), hash.digest('hex'));
    expect(await installPrivate({ dir, label: 'the thing' })).toBeUndefined();
    // A changed lockfile is another install (in another test run: this one's failed already).
    vi.stubEnv(TEST_RUN_VARIABLE, 'another run');
    writeFileSync(join(dir, 'pnpm-lock.yaml'), "lockfileVersion: '9.0'\n\n");
    expect(await installPrivate({ dir, label: 'the thing' })).toMatch(/exited 1/);
  }, 60_000);

  it('waits while a live process holds the lock, and takes over the lock of a process that is gone', async () => {
    mkdirSync(join(dir, '.rl-install-lock'));
    writeFileSync(join(dir, '.rl-install-lock', 'owner'), String(process.pid));
    expect(await installPrivate({ dir, label: 'the thing', timeoutMs: 600 })).toBe(
      `the thing: gave up waiting for the install another process holds (${join(dir, '.rl-install-lock')})`,
    );
    const gone = spawnSync(process.execPath, ['-e', '']).pid;
    writeFileSync(join(dir, '.rl-install-lock', 'owner'), String(gone));
    expect(await installPrivate({ dir, label: 'the thing' })).toMatch(/exited 1/);
  }, 60_000);
});
