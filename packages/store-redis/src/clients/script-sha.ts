import { createHash } from 'node:crypto';

/** The SHA1 of a script's text, in hex: what `EVALSHA` names it by in the server's script cache. */
export function scriptSha1(lua: string): string {
  return createHash('sha1').update(lua).digest('hex');
}

/** True when a Redis error reply is `NOSCRIPT` (the script is not in the server's cache: send its text by `EVAL`). */
export function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}
