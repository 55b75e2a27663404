import type { IncomingHttpHeaders } from 'node:http';

/**
 * The key of an `Idempotency-Key` request header (draft-ietf-httpapi-idempotency-key-header: an Item
 * Structured Field whose value is a String, `Idempotency-Key: "8e03978e-40d5-43e8-bc93-6894a57f9324"`),
 * or undefined when there is none: no header, an empty one, or several (the draft allows one). A
 * value sent without the quotes, as many clients do, is taken as it is; a quoted one is unescaped
 * (`\"`, `\\`). What each adapter's `idempotencyKeyHeader(req)` reads.
 */
export function idempotencyKeyFrom(headers: IncomingHttpHeaders): string | undefined {
  const value = headers['idempotency-key'];
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  if (text.length < 2 || !text.startsWith('"') || !text.endsWith('"')) return text.length === 0 ? undefined : text;
  const inner = text.slice(1, -1).replace(/\\(["\\])/g, '$1');
  return inner.length === 0 ? undefined : inner;
}
