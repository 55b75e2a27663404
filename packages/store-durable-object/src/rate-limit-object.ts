import { Holder, type HolderConnection } from '@rl/store-cluster/remote';
import { MemoryStore } from '@rl/store-memory';
import { PROTOCOL_ERROR_CODE, WIRE_CONTENT_TYPE, type ProtocolError } from './protocol.js';

/** The largest body the object reads, in UTF-16 units (a message of 1,024 grouped charges is some 600 kB). */
const MAX_BODY = 8 * 1024 * 1024;

/**
 * The most keys one object holds by default (the memory store's own default is 1,000,000): an
 * object's isolate has 128 MB, and a key costs its store about 100 bytes (a fixed window) to 400 (a
 * sliding log with one record), so 1,000,000 keys would overrun it and the runtime would reset the
 * object, every key's state with it. For more keys, more objects (`shards`).
 */
export const OBJECT_MAX_KEYS = 100_000;

/**
 * The Durable Object that holds rate-limit states: export it from your Worker and bind it
 * (`durable_objects.bindings`, with a migration naming it), and give the binding to
 * `DurableObjectStore({ namespace })`. Each object decides its calls on one `MemoryStore` (every
 * algorithm, lockouts, bans, overrides, reservations, settle, idempotency, permits), each message
 * in one synchronous run: one object is one thread, so every step is atomic per key across every
 * Worker isolate that reaches the object.
 *
 * State is the object's memory: the memory store's own expiry sweeps a key once its state has
 * expired (and `maxKeys` bounds it), and an object that the runtime evicts (idle for some time) takes
 * its state with it, as a restarted memory store does.
 *
 * A request that is not the store's (another method, another content type, a body that is not rl's
 * wire) is answered 405, 415 or 400 with `{ error: { code: 'RL_DURABLE_OBJECT_PROTOCOL', message } }`
 * and touches no state; a call that is malformed is answered with its own error, the others of its
 * message as usual.
 */
export class RateLimitObject {
  private readonly holder = new Holder(this.createStore());

  /**
   * The store the object decides on, made once per object: a `MemoryStore` of at most
   * {@link OBJECT_MAX_KEYS} keys. A subclass may give it other options (`maxKeys`, `sweepInterval`);
   * export the subclass as the bound class.
   */
  protected createStore(): MemoryStore {
    return new MemoryStore({ maxKeys: OBJECT_MAX_KEYS });
  }

  /** `state` and `env` are the runtime's (unused: the state is in memory). */
  constructor(_state?: unknown, _env?: unknown) {}

  /** Answers one message of a `DurableObjectStore` (see protocol.ts). Never throws. */
  async fetch(request: Request): Promise<Response> {
    if (request.method !== 'POST') return refuse(405, `method ${request.method}: the store's requests are POST`);
    const type = request.headers.get('content-type');
    if (type !== WIRE_CONTENT_TYPE)
      return refuse(415, `content-type ${String(type)}: the store's requests are ${WIRE_CONTENT_TYPE}`);
    let body: string;
    try {
      body = await request.text();
    } catch (error) {
      return refuse(400, `the body could not be read (${error instanceof Error ? error.message : String(error)})`);
    }
    if (body.length > MAX_BODY) return refuse(400, `a body of ${body.length} characters (at most ${MAX_BODY})`);
    const sent: string[] = [];
    const connection: HolderConnection = { send: (text) => sent.push(text) };
    const { messages, calls } = this.holder.counts;
    this.holder.handle(connection, body);
    this.holder.forget(connection);
    // A calls message with at least one call (`[id, verb, ...arguments]`): nothing was run otherwise.
    const counts = this.holder.counts;
    if (counts.messages === messages || counts.calls === calls)
      return refuse(400, "the body is not a calls message of rl's wire ({ rl, calls: [[id, verb, ...], ...] })");
    if (sent.length === 0) return refuse(500, 'the answer could not be encoded');
    return new Response(sent.join('\n'), { headers: { 'content-type': WIRE_CONTENT_TYPE } });
  }
}

function refuse(status: number, message: string): Response {
  const body: ProtocolError = { error: { code: PROTOCOL_ERROR_CODE, message: `rl durable object: ${message}` } };
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
}
