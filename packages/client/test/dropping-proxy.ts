import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A proxy on 127.0.0.1 that loses some of the upstream's responses, with what it did. */
export interface DroppingProxy {
  readonly url: string;
  /** Requests forwarded upstream (each one reached the server, and was charged there or replayed). */
  readonly forwarded: () => number;
  /** Responses the proxy lost: the upstream answered, the client saw its connection close. */
  readonly dropped: () => number;
  close(): Promise<void>;
}

/**
 * Starts a proxy in front of `upstream` (`http://127.0.0.1:<port>`) that forwards every request and
 * drops the response of a share of them: the server has done the work (and charged its limit), the
 * client sees a network error, as when a response is lost on its way. Which ones is a seeded draw
 * (mulberry32), the same on every run.
 */
export async function startDroppingProxy(upstream: string, dropShare: number, seed: number): Promise<DroppingProxy> {
  let state = seed >>> 0;
  const draw = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  let forwarded = 0;
  let dropped = 0;
  const target = new URL(upstream);
  const server: Server = createServer((req, res) => {
    const drop = draw() < dropShare;
    const upstreamRequest = request(
      { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers },
      (upstreamResponse) => {
        if (drop) {
          dropped++;
          upstreamResponse.resume();
          res.socket?.destroy();
          return;
        }
        res.writeHead(upstreamResponse.statusCode ?? 502, upstreamResponse.headers);
        upstreamResponse.pipe(res);
      },
    );
    forwarded++;
    req.pipe(upstreamRequest);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    forwarded: () => forwarded,
    dropped: () => dropped,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
