import { requestHeader, type RequestHeaders } from './binding.js';

/** The longest key taken from a header (the limiter's own bound on an idempotency key). */
const MAX_KEY_LENGTH = 512;

/**
 * The key of an `Idempotency-Key` request header (draft-ietf-httpapi-idempotency-key-header: an Item
 * Structured Field whose value is a String, `Idempotency-Key: "8e03978e-40d5-43e8-bc93-6894a57f9324"`),
 * or undefined when there is none: no header, an empty one, several (the draft allows one), or one
 * longer than 512 characters. A
 * value sent without the quotes, as many clients do, is taken as it is; a quoted one is unescaped
 * (`\"`, `\\`). What each adapter's `idempotencyKeyHeader(req)` reads.
 */
export function idempotencyKeyFrom(headers: RequestHeaders): string | undefined {
  const value = requestHeader(headers, 'idempotency-key');
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  // A client's header is no error of the app: one too long to be a key, or a list, is no key.
  if (text.length === 0 || text.length > MAX_KEY_LENGTH) return undefined;
  if (!text.startsWith('"')) return text.includes(',') ? undefined : text;
  // One String: quoted to its end, its quotes and backslashes escaped (two headers joined by Node are `"a", "b"`).
  const string = /^"((?:[^"\\]|\\["\\])+)"$/.exec(text);
  return string === null ? undefined : string[1]!.replace(/\\(["\\])/g, '$1');
}
