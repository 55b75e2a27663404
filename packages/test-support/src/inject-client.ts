/**
 * The shared adapter suite's client over a framework's `inject()` (Fastify's, from light-my-request;
 * Nest's on its Fastify platform): no socket, which is how Fastify apps are tested and how serverless
 * adapters such as @fastify/aws-lambda serve every request.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { LeavingRequest } from './adapter-suite/adapter.js';
import type { RequestInit, TestResponse } from './http-client.js';

/** What the client gives `inject()`. */
export interface InjectRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string;
  signal?: AbortSignal;
}

/** What `inject()` answers: light-my-request's response, as much of it as the suite reads. */
export interface InjectedResponse {
  statusCode: number;
  headers: Record<string, unknown>;
  body: string;
}

/** A framework's `inject()`. */
export type Inject = (request: InjectRequest) => Promise<InjectedResponse>;

/** `request` and `start` of a `MountedApp` served through `inject`. */
export interface InjectClient {
  request(path?: string, init?: RequestInit): Promise<TestResponse>;
  /** A request whose client leaves when `leave()` aborts it (light-my-request then destroys the request and its response). */
  start(path: string, headers: Record<string, string>): LeavingRequest;
}

export function injectClient(inject: Inject): InjectClient {
  const send = (path: string, init: RequestInit, signal?: AbortSignal): Promise<InjectedResponse> =>
    inject({
      method: init.method ?? 'GET',
      url: path,
      headers: { ...init.headers, ...(init.json !== undefined && { 'content-type': 'application/json' }) },
      ...(init.json !== undefined && { payload: JSON.stringify(init.json) }),
      ...(signal !== undefined && { signal }),
    });
  return {
    async request(path = '/', init = {}) {
      const res = await send(path, init);
      const headers = res.headers as IncomingHttpHeaders;
      const json = /\bjson\b/.test(String(headers['content-type'] ?? ''));
      return {
        status: res.statusCode,
        headers,
        text: res.body,
        body: json && res.body !== '' ? JSON.parse(res.body) : res.body,
      };
    },
    start(path, headers) {
      const controller = new AbortController();
      // An aborted inject() rejects: the client left, so no status ever reaches it.
      const answered = send(path, { headers }, controller.signal).then(
        (res) => res.statusCode,
        () => new Promise<number>(() => undefined),
      );
      return { answered, leave: () => controller.abort() };
    },
  };
}
