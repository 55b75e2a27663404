import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/** The built command, as `npx rl` runs it (the test command builds before it tests). */
const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url));

/** `rl <args> | head -c 100` in a shell: what the command said on stderr, and its own exit status. */
function piped(args: readonly string[]): Promise<{ status: string; stderr: string }> {
  const quoted = [process.execPath, BIN, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ');
  const child = spawn('bash', ['-c', `${quoted} | head -c 100 > /dev/null; echo "\${PIPESTATUS[0]}"`]);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  return new Promise((resolve) => child.on('close', () => resolve({ status: stdout.trim(), stderr })));
}

describe('the rl command (dist/bin.js)', () => {
  it.skipIf(!existsSync(BIN))(
    'a reader that stops early (| head) ends it quietly: exit 0, nothing on stderr (skipped before a build)',
    async () => {
      // Output larger than a pipe's buffer (94 kB), so that the command is still writing when the reader leaves.
      const args = ['simulate', '--pattern', '50/s for 10s, 600/s for 30s', '--keys', '100'];
      args.push('--limit', 'tokenBucket(capacity=400,refillRate=200)', '--limit', 'fixedWindow(limit=200,window=1s)');
      expect(await piped([...args, '--json'])).toEqual({ status: '0', stderr: '' });
    },
    30_000,
  );
});
