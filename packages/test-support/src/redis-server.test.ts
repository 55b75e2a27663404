import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  ExternalRedisRefusedError,
  externalRedis,
  RedisBinaryMissingError,
  refuseNonDisposableRedis,
  requireRedisBinaries,
  REDIS_DISPOSABLE_VARIABLE,
  startRedisCluster,
  startRedisServer,
  sleep,
} from './redis-server.js';
import { killProcesses, processesWithin, type MarkedProcess } from './leftovers.js';
import { startRedisDeployments } from './redis-fixtures.js';

// The tests pause, flush and fill the Redis they use: an external one only when it is said disposable.
describe('externalRedis', () => {
  it('is undefined when the variable is unset or empty: the harness starts its own servers', () => {
    expect(externalRedis('REDIS_URL', {})).toBeUndefined();
    expect(externalRedis('REDIS_URL', { REDIS_URL: '' })).toBeUndefined();
    expect(externalRedis('REDIS_CLUSTER_NODES', { REDIS_URL: 'redis://127.0.0.1:6379' })).toBeUndefined();
  });

  it.each(['REDIS_URL', 'REDIS_CLUSTER_NODES'] as const)(
    'refuses %s without RL_TEST_REDIS_DISPOSABLE=1, naming both variables',
    (variable) => {
      for (const optIn of [undefined, '', '0', 'true', 'yes']) {
        const env = {
          [variable]: 'redis://127.0.0.1:6379',
          ...(optIn === undefined ? {} : { [REDIS_DISPOSABLE_VARIABLE]: optIn }),
        };
        let thrown: unknown;
        try {
          externalRedis(variable, env);
        } catch (error) {
          thrown = error;
        }
        expect(thrown).toBeInstanceOf(ExternalRedisRefusedError);
        expect(thrown).toMatchObject({ code: 'RL_TEST_REDIS_NOT_DISPOSABLE', variable });
        expect((thrown as Error).message).toContain(`${variable} is set`);
        expect((thrown as Error).message).toContain('RL_TEST_REDIS_DISPOSABLE=1');
      }
    },
  );

  it('returns the value with RL_TEST_REDIS_DISPOSABLE=1', () => {
    expect(externalRedis('REDIS_URL', { REDIS_URL: 'redis://10.0.0.5:6380', RL_TEST_REDIS_DISPOSABLE: '1' })).toBe(
      'redis://10.0.0.5:6380',
    );
    expect(
      externalRedis('REDIS_CLUSTER_NODES', {
        REDIS_CLUSTER_NODES: '10.0.0.5:7000,10.0.0.6:7000',
        RL_TEST_REDIS_DISPOSABLE: '1',
      }),
    ).toBe('10.0.0.5:7000,10.0.0.6:7000');
  });
});

describe('refuseNonDisposableRedis (the vitest config runs it before any test)', () => {
  it('passes without external servers, or with the opt-in', () => {
    expect(() => refuseNonDisposableRedis({})).not.toThrow();
    expect(() =>
      refuseNonDisposableRedis({
        REDIS_URL: 'redis://127.0.0.1:6379',
        REDIS_CLUSTER_NODES: '127.0.0.1:7000',
        RL_TEST_REDIS_DISPOSABLE: '1',
      }),
    ).not.toThrow();
  });

  it('throws for either variable without the opt-in', () => {
    expect(() => refuseNonDisposableRedis({ REDIS_URL: 'redis://127.0.0.1:6379' })).toThrow(ExternalRedisRefusedError);
    expect(() => refuseNonDisposableRedis({ REDIS_CLUSTER_NODES: '127.0.0.1:7000' })).toThrow(
      /REDIS_CLUSTER_NODES is set/,
    );
  });
});

describe('where the refusal applies: the files that start a Redis, in one line', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('the vitest config does not refuse: a file that uses no Redis runs with REDIS_URL set', async () => {
    vi.stubEnv('REDIS_URL', 'redis://127.0.0.1:6379');
    vi.stubEnv(REDIS_DISPOSABLE_VARIABLE, '');
    // Imported by its URL: the config is outside this package's TypeScript project.
    const config = new URL('../../../vitest.config.ts', import.meta.url).href;
    await expect(import(/* @vite-ignore */ config)).resolves.toHaveProperty('default');
  });

  it('startRedisServer and startRedisCluster refuse, with an error whose stack is its one-line message', async () => {
    vi.stubEnv('REDIS_URL', 'redis://127.0.0.1:6379');
    vi.stubEnv('REDIS_CLUSTER_NODES', '127.0.0.1:7000');
    vi.stubEnv(REDIS_DISPOSABLE_VARIABLE, '');
    for (const start of [() => startRedisServer(), () => startRedisCluster()]) {
      const error = await start().then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect(error).toBeInstanceOf(ExternalRedisRefusedError);
      const { message, stack } = error as Error;
      expect(message).not.toContain('\n');
      expect(stack).toBe(`ExternalRedisRefusedError: ${message}`);
    }
  });
});

describe('startRedisDeployments (useRedisDeployments) refused', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  // Before the fix the refusal of REDIS_URL rejected at once while the Cluster went on starting: its
  // nodes appeared after the refusal, and outlived the run. A node works in the folder its fixture
  // makes for it in the temporary directory: one of the test's own finds them.
  it('by REDIS_URL without the opt-in: refused before anything starts, and nothing starts after', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rl-fixture-refused-'));
    try {
      vi.stubEnv('REDIS_URL', 'redis://127.0.0.1:6379');
      vi.stubEnv(REDIS_DISPOSABLE_VARIABLE, '');
      vi.stubEnv('TMPDIR', dir);
      await expect(startRedisDeployments()).rejects.toBeInstanceOf(ExternalRedisRefusedError);
      // A quiet period (TMPDIR still the test's): a Cluster still starting spawns its first node within a few ms.
      const started: MarkedProcess[] = [];
      for (let i = 0; i < 20 && started.length === 0; i++) {
        await sleep(50);
        started.push(...processesWithin(dir));
      }
      killProcesses(started);
      expect(started).toEqual([]);
    } finally {
      vi.unstubAllEnvs();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('requireRedisBinaries', () => {
  it('fails at once, naming redis-server and how to install it, when the binary is not on the PATH', () => {
    const started = Date.now();
    expect(() => requireRedisBinaries({ ...process.env, PATH: '/nonexistent' })).toThrow(
      /redis-server is not on the PATH.*apt-get install redis-server/s,
    );
    expect(Date.now() - started).toBeLessThan(5_000);
    let thrown: unknown;
    try {
      requireRedisBinaries({ ...process.env, PATH: '/nonexistent' });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(RedisBinaryMissingError);
    expect(thrown).toMatchObject({ code: 'RL_TEST_REDIS_BINARY_MISSING', binary: 'redis-server' });
    expect((thrown as Error).stack).toBe(`RedisBinaryMissingError: ${(thrown as Error).message}`);
  });

  it('passes on this machine, where the binaries are', () => {
    expect(() => requireRedisBinaries()).not.toThrow();
  });
});
