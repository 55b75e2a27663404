import { sha256 } from '@noble/hashes/sha2';

/**
 * What core needs of the JavaScript runtime, in a form every runtime has (Node, Bun, Deno, Cloudflare
 * Workers, a browser): no `node:` module is imported anywhere a Fetch adapter loads. Node keeps its
 * behaviour: its process warnings, `setImmediate`.
 */

/** The process of a runtime that has one (Node, Bun, Deno), or undefined (Workers, browsers). */
const runtimeProcess = (
  globalThis as { process?: { emitWarning?(warning: string | Error, options?: { code?: string }): void } }
).process;

/**
 * A warning: a process warning where the runtime has them (`process.on('warning')` hears it, with
 * its `code`), else `console.warn` with the code first.
 */
export function emitWarning(warning: string | Error, options?: { code: string }): void {
  const code = options?.code;
  if (typeof runtimeProcess?.emitWarning === 'function') {
    if (code === undefined) runtimeProcess.emitWarning(warning);
    else runtimeProcess.emitWarning(warning, { code });
    return;
  }
  const message = warning instanceof Error ? warning.message : warning;
  console.warn(code === undefined ? message : `(${code}) ${message}`);
}

/** The warnings {@link emitWarningOnce} has emitted in this process, by code and id. */
const emittedOnce = new Set<string>();

/**
 * {@link emitWarning} once per process for each `id` of a `code` (a field and its value, a namespace):
 * a warning about a configuration is said when it is made, not each time it is made again.
 */
export function emitWarningOnce(id: string, warning: string, options: { code: string }): void {
  const seen = `${options.code}\u0000${id}`;
  if (emittedOnce.has(seen)) return;
  emittedOnce.add(seen);
  emitWarning(warning, options);
}

/** Runs `callback(value)` after the I/O that is waiting (Node's `setImmediate`, read at each call; a 0 ms timeout where the runtime has none). */
export function afterIo<T>(callback: (value: T) => void, value: T): void {
  const immediate = (globalThis as { setImmediate?: (callback: (value: T) => void, value: T) => unknown }).setImmediate;
  if (immediate !== undefined) immediate(callback, value);
  else setTimeout(callback, 0, value);
}

/** `bytes` as base64url without padding. */
export function base64url(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i]!);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** The SHA-256 of a string's UTF-16 code units, little-endian (lossless for any string, lone surrogates included), as base64url. */
export function sha256OfUtf16(value: string): string {
  const bytes = new Uint8Array(value.length * 2);
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    bytes[2 * i] = unit & 0xff;
    bytes[2 * i + 1] = unit >>> 8;
  }
  return base64url(sha256(bytes));
}

/** `count` random bytes (Web Crypto, in every runtime) as base64url. */
export function randomBase64url(count: number): string {
  return base64url(globalThis.crypto.getRandomValues(new Uint8Array(count)));
}
