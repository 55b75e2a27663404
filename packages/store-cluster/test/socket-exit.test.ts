/**
 * A socket store and the life of its process, in a real process: an idle store never keeps it alive,
 * and a call waiting for the holder's answer does (a script's last call is answered before it exits).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useWorkerScript } from '@rl/test-support';
import { serveClusterStore } from '../src/index.js';

const script = useWorkerScript(fileURLToPath(new URL('./support/socket-last-call.ts', import.meta.url)));
// Made when a test runs (a run that filters every test out runs no hook, and would leave it behind).
let dir: string;
beforeAll(() => void (dir = mkdtempSync(join(tmpdir(), 'rl-cluster-exit-'))));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the script against `socket`: its exit code and what it printed. Killed after 20 s. */
function run(socket: string): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script.path, socket], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout });
    });
  });
}

describe('ClusterStore over a socket: the process it runs in', () => {
  it('waits for the answer to its last call, then exits', async () => {
    const socket = join(dir, 'h.sock');
    const server = serveClusterStore({ socket });
    await server.listening;
    try {
      // Without the socket held while the call waited: no output, and exit code 13 (an unsettled top-level await).
      expect(await run(socket)).toEqual({ code: 0, stdout: '5\n' });
    } finally {
      await server.close();
    }
  }, 30_000);
});
