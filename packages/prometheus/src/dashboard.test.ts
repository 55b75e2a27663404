import { readFileSync } from 'node:fs';
import { DECISION_OUTCOMES } from '@rl/core';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { prometheusObserver } from './index.js';

// The Grafana dashboard in examples/grafana queries this exporter's metrics: a renamed metric, label or
// label value must not leave it querying nothing.
const dashboard = JSON.parse(
  readFileSync(new URL('../../../examples/grafana/rl-dashboard.json', import.meta.url), 'utf8'),
) as {
  panels: {
    type: string;
    title: string;
    datasource?: { uid: string };
    targets?: { expr: string; legendFormat?: string; datasource: { uid: string } }[];
  }[];
  templating: { list: { name: string; type: string }[] };
};
const queries = dashboard.panels.flatMap((panel) => (panel.targets ?? []).map((target) => ({ panel, ...target })));

describe('examples/grafana/rl-dashboard.json', () => {
  it('takes its data source from the DS_PROMETHEUS variable in every panel and query', () => {
    expect(dashboard.templating.list).toContainEqual(
      expect.objectContaining({ name: 'DS_PROMETHEUS', type: 'datasource' }),
    );
    const panels = dashboard.panels.filter((panel) => panel.type !== 'row');
    expect(panels.length).toBeGreaterThan(0);
    for (const panel of panels) expect([panel.title, panel.datasource?.uid]).toEqual([panel.title, '${DS_PROMETHEUS}']);
    for (const query of queries) expect([query.expr, query.datasource.uid]).toEqual([query.expr, '${DS_PROMETHEUS}']);
  });

  it('queries only metrics and labels the exporter registers and outcomes the core reports', () => {
    const registry = new Registry();
    prometheusObserver({ registry });
    const names = new Set(registry.getMetricsAsArray().flatMap((metric) => [metric.name, `${metric.name}_bucket`]));
    const used = new Set(queries.flatMap((query) => query.expr.match(/\brl_[a-z_]+/g) ?? []));
    expect([...used].filter((name) => !names.has(name))).toEqual([]);
    for (const name of [
      'rl_decisions_total',
      'rl_delay_seconds_bucket',
      'rl_store_duration_seconds_bucket',
      'rl_store_errors_total',
      'rl_held_requests',
    ])
      expect(used).toContain(name);
    const labels = new Set([
      'le',
      ...registry.getMetricsAsArray().flatMap((metric) => (metric as unknown as { labelNames: string[] }).labelNames),
    ]);
    const grouped = queries.flatMap((query) =>
      [...query.expr.matchAll(/\bby \(([^)]*)\)/g), ...(query.legendFormat ?? '').matchAll(/\{\{(\w+)\}\}/g)].flatMap(
        (match) => match[1]!.split(/,\s*/),
      ),
    );
    expect(grouped.filter((label) => !labels.has(label))).toEqual([]);
    expect(grouped).toContain('error_type');
    const outcomes = queries.flatMap((query) =>
      [...query.expr.matchAll(/outcome=~"([^"]+)"/g)].flatMap((match) => match[1]!.split('|')),
    );
    expect(outcomes.filter((outcome) => !(DECISION_OUTCOMES as readonly string[]).includes(outcome))).toEqual([]);
  });
});
