/**
 * The longest wait a server's field may name, in seconds: 2^31, the value RFC 9111 gives a
 * delta-seconds that overflows. A field past it is no time at all but a broken or hostile one, and is
 * taken as absent (a caller then backs off as if the server had said nothing).
 */
export const MAX_FIELD_SECONDS = 2 ** 31;

/**
 * The wait a `Retry-After` field asks for, in milliseconds from `wallNow` (RFC 9110, 10.2.3):
 * delta-seconds (`120`, `0` included) or an HTTP-date (`Wed, 21 Oct 2026 07:28:00 GMT`, a date in
 * the past a wait of 0). `wallNow` is the caller's wall clock, milliseconds since the epoch, against
 * which a date is read.
 *
 * Undefined when the field is absent or not one valid value: empty, negative, fractional, past
 * {@link MAX_FIELD_SECONDS}, a date `Date.parse` does not read, or several values (two fields, which
 * `Headers` joins with `, `; a date's own comma is told apart by its form). Bad input from a server
 * never throws here.
 */
export function retryAfterMs(value: string | null, wallNow: number): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) {
    const seconds = Number(text);
    return seconds <= MAX_FIELD_SECONDS ? seconds * 1000 : undefined;
  }
  // IMF-fixdate, the form servers send (RFC 9110 5.6.7); the obsolete forms are rare enough to refuse.
  if (!/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  const ms = at - wallNow;
  // `!(… <= …)`: a wall clock that gave no number (NaN) reads no date either.
  if (!(ms <= MAX_FIELD_SECONDS * 1000)) return undefined;
  return Math.max(0, ms);
}
