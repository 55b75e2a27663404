/**
 * A small HTTP client for tests against a listening app: one connection per request (no keep-alive,
 * so closing the app never waits on an idle socket), the headers as Node parses them, the body as
 * text and, for a JSON content type (`application/json`, `application/problem+json`), parsed.
 */
import { once } from 'node:events';
import http, { type ClientRequest, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseList } from 'structured-headers';
import { expect } from 'vitest';

export interface TestResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** The parsed JSON body, or the text when the response is not JSON. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

export interface RequestInit {
  method?: string;
  headers?: Record<string, string>;
  /** Sent as JSON. */
  json?: unknown;
}

/** Sends one request to `base + path` and resolves with the whole response. */
export function request(base: string, path = '/', init: RequestInit = {}): Promise<TestResponse> {
  const headers = { ...init.headers, ...(init.json !== undefined && { 'content-type': 'application/json' }) };
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${path}`, { method: init.method ?? 'GET', headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        const json = /\bjson\b/.test(res.headers['content-type'] ?? '');
        resolve({
          status: res.statusCode!,
          headers: res.headers,
          text,
          body: json && text !== '' ? JSON.parse(text) : text,
        });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(init.json === undefined ? undefined : JSON.stringify(init.json));
  });
}

/** Starts a request whose response nobody reads, for a client that leaves: `destroy()` it. Errors are ignored. */
export function startRequest(base: string, path = '/', headers: Record<string, string> = {}): ClientRequest {
  const client = http.get(`${base}${path}`, { headers, agent: false });
  client.on('error', () => {});
  return client;
}

/** The members of a draft-8 RateLimit or RateLimit-Policy header, parsed by an independent parser. */
export function members(value: unknown): { name: string; params: Record<string, unknown> }[] {
  expect(value, 'header present').toBeTypeOf('string');
  return parseList(value as string).map(([item, params]) => ({
    name: item as string,
    params: Object.fromEntries(params),
  }));
}

/** A promise and the function that resolves it. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Lets pending callbacks of the event loop (a warning, an I/O event already queued) run. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** A Node request handler (an Express app, a Koa app's `callback()`) listening on 127.0.0.1, with {@link request} bound to it. */
export interface ServedApp {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  request(path?: string, init?: RequestInit): Promise<TestResponse>;
  /** Drops the connections and stops listening. */
  close(): Promise<void>;
}

/** Serves `handler` on an ephemeral port of 127.0.0.1. */
export async function serve(handler: http.RequestListener): Promise<ServedApp> {
  const server = http.createServer(handler).listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    request: (path, init) => request(url, path, init),
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
