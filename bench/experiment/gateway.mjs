// The gateway of the burst experiment: forwards GET / to the echo backend over a keep-alive agent.
// GATEWAY_CONFIG (JSON) chooses it: `{ kind: 'baseline' }` is plain node:http without limits;
// `{ kind: 'fastify', limit, wait, store, prefix }` is Fastify 5 with @rl/fastify, one key for all
// traffic (the seed's gateway limits the route as a whole). Prints `READY <port>`.
import http from 'node:http';
import { algorithmOf } from './configs.mjs';

const config = JSON.parse(process.env.GATEWAY_CONFIG);
const backendPort = Number(process.env.BACKEND_PORT);
const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });

/** Forwards one request to the backend; resolves with its status and body. */
function forward() {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: backendPort, path: '/', method: 'GET', agent }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

async function baseline() {
  const server = http.createServer((req, res) => {
    req.resume();
    forward().then(
      (r) => {
        res.statusCode = r.status;
        res.end(r.body);
      },
      () => {
        res.statusCode = 502;
        res.end();
      },
    );
  });
  server.keepAliveTimeout = 60_000;
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return server.address().port;
}

async function gateway() {
  const [{ default: Fastify }, { default: rateLimit }, core] = await Promise.all([
    import('fastify'),
    import('@rl/fastify'),
    import('@rl/core'),
  ]);
  let store;
  if (config.store === 'redis') {
    const [{ default: Redis }, { RedisStore }] = await Promise.all([import('ioredis'), import('@rl/store-redis')]);
    store = new RedisStore({ client: new Redis({ host: '127.0.0.1', port: Number(process.env.REDIS_PORT) }) });
  }
  const app = Fastify({ logger: false, keepAliveTimeout: 60_000 });
  await app.register(rateLimit, {
    algorithm: algorithmOf(core, config.limit),
    key: () => 'all',
    prefix: config.prefix,
    ...(store ? { store } : {}),
    ...(config.wait ? { wait: { maxDelay: config.wait } } : {}),
    // No client-side store timeout: on this shared 2-core machine the default 50 ms trips the failure
    // policy under load, and the run would then measure the fallback, not the algorithm.
    timeout: false,
  });
  app.get('/', async (request, reply) => {
    const r = await forward();
    reply.code(r.status);
    return r.body;
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return app.server.address().port;
}

const port = config.kind === 'baseline' ? await baseline() : await gateway();
process.stdout.write(`READY ${port}\n`);
