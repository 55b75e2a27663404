/** When the end of a response on a real Node server is told: the events a concurrency permit is released on. */
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable, pipeline } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { nodeResponseEvents } from './node-response.js';
import type { RateLimitResult } from './result.js';

const RESULT = {} as RateLimitResult;
const events = nodeResponseEvents<IncomingMessage, ServerResponse>((res) => res);
const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0)) await close();
});

/** A server whose handler is `handle`, each response watched: `ended` resolves with `finished` when its end is told. */
async function serve(handle: (res: ServerResponse, done: () => void) => void) {
  let told: (finished: boolean) => void = () => {};
  const ended = new Promise<boolean>((resolve) => (told = resolve));
  const server = createServer((req, res) => {
    events.onEnd(req, res, RESULT, (_req, _res, _result, finished) => told(finished));
    handle(res, () => events.workDone(res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closing.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  /** One GET; resolves once the client saw the response end or break. */
  const get = () =>
    new Promise<void>((resolve) => {
      const req = httpRequest({ host: '127.0.0.1', port, path: '/' }, (res) => {
        res.resume();
        res
          .on('end', resolve)
          .on('error', () => resolve())
          .on('aborted', resolve);
      });
      req.on('error', () => resolve());
      req.end();
    });
  return { ended, get };
}

/** A body that sends `chunks` chunks, then fails. */
function failingBody(chunks: number): Readable {
  let sent = 0;
  return new Readable({
    read() {
      if (sent++ < chunks) this.push('x'.repeat(1024));
      else this.destroy(new Error('disk read failed'));
    },
  });
}

describe('nodeResponseEvents: the end of a response, told once its work is over', () => {
  it('a response sent in full: finished', async () => {
    const { ended, get } = await serve((res) => res.end('ok'));
    await get();
    expect(await ended).toBe(true);
  });

  it.each([
    ['a streamed body that fails after its head (pipeline destroys the response)', 3],
    ['a streamed body that fails before its first byte', 0],
  ])('%s: not finished, told at the close, not at a lease', async (_what, chunks) => {
    const { ended, get } = await serve((res) => pipeline(failingBody(chunks), res, () => {}));
    await get();
    expect(await ended).toBe(false);
  });

  it('a client gone while the handler works: told when the handler ends its response, not before', async () => {
    let finishWork: () => void = () => {};
    let heard = false;
    let closed: () => void = () => {};
    const closing = new Promise<void>((resolve) => (closed = resolve));
    const { ended, get } = await serve((res) => {
      finishWork = () => res.end('late');
      res.on('close', () => setImmediate(closed)); // a turn after the watch heard the close
      res.req.socket.destroy(); // the client's connection breaks while the handler works
    });
    void ended.then(() => (heard = true));
    await get();
    await closing;
    expect(heard).toBe(false);
    finishWork();
    expect(await ended).toBe(false);
  });
});
