// Heap bytes per request of the HTTP allow (or deny) path, per framework: the bare app, the
// hand-written bucket and rl on the memory store, each server alone with a young generation large
// enough that no collection runs (section 4's allocation count, without its timed runs). A count,
// not a time: it holds on a busy machine. Usage (after a build):
// node bench/http-alloc.mjs [frameworks=express,fastify,koa,hono] [mode=allow] [requests=4000]
import { table } from './lib/common.mjs';
import { startLoad } from './lib/http-load-client.mjs';
import { allocationPerRequest } from './sections/4-http.mjs';

const frameworks = (process.argv[2] ?? 'express,fastify,koa,hono').split(',');
const mode = process.argv[3] ?? 'allow';
const requests = Number(process.argv[4] ?? 4000);
const VARIANTS = ['bare', 'hand', 'rl-memory'];

const load = startLoad(1);
const rows = [];
try {
  for (const fw of frameworks) {
    const bytes = {};
    for (const variant of VARIANTS) {
      bytes[variant] = (await allocationPerRequest(load, fw, variant, mode, 64, requests)).bytesPerRequest;
    }
    rows.push([
      fw,
      Math.round(bytes.bare),
      Math.round(bytes.hand),
      Math.round(bytes['rl-memory']),
      Math.round(bytes['rl-memory'] - bytes.hand),
    ]);
  }
} finally {
  load.stop();
}
console.log(
  `heap bytes per request, ${mode} path, over ${requests} requests after a 3000-request warm-up ('-': a collection ran)`,
);
console.log(table(['framework', 'bare', 'hand bucket', 'rl memory', 'rl over hand'], rows));
