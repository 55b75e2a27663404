import { fixedWindow } from '@rl/core';
import { FakeTimers } from '@rl/core/testing';
import { spawnSync } from 'node:child_process';
import { lstatSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ClusterStore } from './cluster-store.js';
import { serveClusterStore } from './serve.js';
import { readLines } from './socket.js';

const limit = fixedWindow({ limit: 5, window: '1h' });
// Made when a test runs (a run that filters every test out runs no hook, and would leave it behind).
let dir: string;
beforeAll(() => void (dir = mkdtempSync(join(tmpdir(), 'rl-cluster-socket-'))));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
/** How a check that waits on the other end is retried: every 20 ms, for at most 3 s. */
const RETRY = { interval: 20, timeout: 3_000 };

describe('ClusterStore over a socket (the PM2 layout)', () => {
  it('a holder away is a store error at once; restarted, it is reached again and every key is forgotten', async () => {
    const socket = join(dir, 'holder.sock');
    let server = serveClusterStore({ socket });
    await server.listening;
    const store = new ClusterStore({ socket });
    const heard: (string | undefined)[] = [];
    const listener = (key: string | undefined) => heard.push(key);
    store.watchResets(listener);
    expect((await store.charge({ key: 'k', algorithm: limit, cost: 2 }, undefined)).decision.remaining).toBe(3);

    await server.close();
    // The first call after the close may be written before the worker sees its end: it fails too, at once.
    const away = await vi.waitFor(
      () =>
        store.peek('k', limit, 0, undefined).then(
          () => Promise.reject(new Error('still answered')),
          (error: unknown) => error,
        ),
      RETRY,
    );
    expect(away).toMatchObject({
      code: 'RL_STORE_ERROR',
      message: expect.stringMatching(/not reachable|ended before it answered/),
    });

    server = serveClusterStore({ socket });
    await server.listening;
    const decision = await vi.waitFor(() => store.peek('k', limit, 0, undefined), RETRY);
    expect(decision.remaining).toBe(5); // a new holder: new state
    expect(heard).toContain(undefined);
    store.close();
    await server.close();
  });

  it('a second holder on a live socket is refused; a stale socket file is taken over', async () => {
    const socket = join(dir, 'twice.sock');
    const first = serveClusterStore({ socket });
    await first.listening;
    await expect(serveClusterStore({ socket }).listening).rejects.toMatchObject({ code: 'EADDRINUSE' });
    await first.close();

    const stale = join(dir, 'stale.sock');
    // Left by a holder that was killed: a socket file no process listens on.
    const killed = `require('node:net').createServer().listen(${JSON.stringify(stale)}, () => process.kill(process.pid, 'SIGKILL'))`;
    spawnSync(process.execPath, ['-e', killed]);
    expect(lstatSync(stale).isSocket()).toBe(true);
    const taking = serveClusterStore({ socket: stale });
    await taking.listening;
    const store = new ClusterStore({ socket: stale });
    expect((await store.peek('k', limit, 0, undefined)).remaining).toBe(5);
    store.close();
    await taking.close();
  });

  it('a file at the socket path is never removed: the holder refuses the path', async () => {
    const file = join(dir, 'ecosystem.config.cjs');
    writeFileSync(file, 'module.exports = {};');
    await expect(serveClusterStore({ socket: file }).listening).rejects.toMatchObject({
      code: 'RL_INVALID_OPTION',
      message: expect.stringContaining('serveClusterStore.socket'),
    });
    expect(readFileSync(file, 'utf8')).toBe('module.exports = {};');
  });

  it('a closed store does not connect again: its retry is cancelled', async () => {
    const socket = join(dir, 'later.sock');
    const timers = new FakeTimers();
    const store = new ClusterStore({ socket, timers });
    // No holder yet: the connection fails, and a retry is set on the store's timers.
    await expect(store.peek('k', limit, 0, undefined)).rejects.toMatchObject({ code: 'RL_STORE_ERROR' });
    await vi.waitFor(async () => expect(timers.pending).toBe(1), RETRY);
    store.close();
    expect(timers.pending).toBe(0);
  });
});

describe('readLines', () => {
  /** The lines read from a socket that is sent `chunks`, one write each, then ended. */
  async function linesOf(chunks: string[]): Promise<string[]> {
    const path = join(dir, `lines-${chunks.length}.sock`);
    const lines: string[] = [];
    const done = new Promise<void>((resolve) => {
      const server = createServer((socket: Socket) => {
        readLines(socket, (text) => lines.push(text));
        socket.on('end', () => server.close(() => resolve()));
      });
      server.listen(path, async () => {
        const { connect } = await import('node:net');
        const client = connect(path);
        for (const chunk of chunks) {
          client.write(chunk);
          await new Promise((next) => setTimeout(next, 2)); // one chunk per read
        }
        client.end();
      });
    });
    await done;
    return lines;
  }

  it('a message split over many chunks, and several messages in one chunk, are read whole and in order', async () => {
    const long = 'x'.repeat(10_000);
    const chunks = [
      ...Array.from({ length: 10 }, (_, i) => long.slice(i * 1_000, (i + 1) * 1_000)),
      '\n{"a":1}\n{"b"',
      ':2}\n',
    ];
    expect(await linesOf(chunks)).toEqual([long, '{"a":1}', '{"b":2}']);
  });
});
