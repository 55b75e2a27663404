import { createRequire } from 'node:module';
import path from 'node:path';
import { createLimiter, tokenBucket } from '@rl/core';
import { MemoryStore } from '@rl/store-memory';
const ROOT = path.resolve('..');
const otel = createRequire(path.join(ROOT, 'packages/opentelemetry/package.json'));
const { MeterProvider, InMemoryMetricExporter, PeriodicExportingMetricReader, AggregationTemporality } = otel('@opentelemetry/sdk-metrics');
const { openTelemetryObserver } = await import(path.join(ROOT, 'packages/opentelemetry/dist/index.js'));
const reader = new PeriodicExportingMetricReader({ exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE), exportIntervalMillis: 3600000 });
const meter = new MeterProvider({ readers: [reader] }).getMeter('p');
const observer = openTelemetryObserver({ meter, storeDurations: process.argv[2] !== 'nodur' });
const limiter = createLimiter({ algorithm: tokenBucket({ capacity: 1e9, refillRate: 1e9 }), store: new MemoryStore({ sweepInterval: false }), observer });
const keys = Array.from({ length: 100000 }, (_, i) => `10.0.${i >> 8}.${i & 255}`);
const t = performance.now(); let n = 0;
while (performance.now() - t < 3000) { for (let j = 0; j < 1000; j++) { limiter.consumeSync(keys[n % 100000]); n++; } }
console.log(((performance.now() - t) * 1000 / n).toFixed(3), 'us');
process.exit(0);
