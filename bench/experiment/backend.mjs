// The echo backend of the burst experiment: answers every request after 5 ms (a timer, not busy work),
// and records what it saw: each arrival's time and the peak number of requests in progress.
// GET /__reset starts a new record; GET /__stats returns it (neither is counted). Prints `READY <port>`.
import { createServer } from 'node:http';
import { performance } from 'node:perf_hooks';

const DELAY_MS = Number(process.env.BACKEND_DELAY_MS ?? 5);
const now = () => performance.timeOrigin + performance.now();

let arrivals = [];
let inFlight = 0;
let peak = 0;

const server = createServer((req, res) => {
  if (req.url === '/__reset') {
    arrivals = [];
    peak = inFlight;
    res.end('ok');
    return;
  }
  if (req.url === '/__stats') {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ arrivals, peakConcurrency: peak }));
    return;
  }
  arrivals.push(now());
  inFlight++;
  if (inFlight > peak) peak = inFlight;
  req.resume();
  setTimeout(() => {
    inFlight--;
    res.setHeader('content-type', 'text/plain');
    res.end('echo');
  }, DELAY_MS);
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  process.stdout.write(`READY ${server.address().port}\n`);
});
