// The metrics exporters and their libraries, for benchmarks: the packages' own dependencies, not the
// bench's (resolved from each package's folder), and their built entry points.
import { createRequire } from 'node:module';
import path from 'node:path';
import { ROOT_DIR } from './common.mjs';

const fromPackage = (name) => createRequire(path.join(ROOT_DIR, 'packages', name, 'package.json'));

export const promClient = fromPackage('prometheus')('prom-client');
export const otelSdk = fromPackage('opentelemetry')('@opentelemetry/sdk-metrics');
export const { prometheusObserver } = await import(path.join(ROOT_DIR, 'packages/prometheus/dist/index.js'));
export const { openTelemetryObserver } = await import(path.join(ROOT_DIR, 'packages/opentelemetry/dist/index.js'));
