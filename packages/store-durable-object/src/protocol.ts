/**
 * How a store's message reaches a `RateLimitObject`: one HTTP request through the Durable Object's
 * binding (`stub.fetch`), `POST` with {@link WIRE_CONTENT_TYPE}, its body one calls message of the
 * cluster store's wire (`@rl/store-cluster/remote`: `{ rl, calls: [[id, verb, ...arguments]] }`).
 * The answer is 200 with the holder's messages, one JSON text per line (JSON never holds a raw
 * newline): notices of resets first, the answers last. Anything else is refused with an
 * {@link ProtocolError} body and a 4xx status, the object's state untouched.
 */
export const WIRE_CONTENT_TYPE = 'application/x-rl-wire';

/** The address the store's requests go to (a Durable Object's fetch needs an absolute URL; its host is not looked up). */
export const WIRE_URL = 'https://rl.durable-object/wire';

/** The stable code of a request the object refused: not the store's protocol. */
export const PROTOCOL_ERROR_CODE = 'RL_DURABLE_OBJECT_PROTOCOL';

/** The body of a refused request: `{ error: { code, message } }`, the message saying what was wrong. */
export interface ProtocolError {
  readonly error: { readonly code: typeof PROTOCOL_ERROR_CODE; readonly message: string };
}

/** The messages of an answer's body, one per line. */
export function answerLines(body: string): string[] {
  return body === '' ? [] : body.split('\n');
}
