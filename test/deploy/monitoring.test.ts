import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { loadConfig } from '../../src/config.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { installed } from '../support/binaries.js';
import { hasRedis, startRedis, type TestRedis } from '../support/redis.js';
import { run } from './podman.js';

/**
 * What an operator reads: the alerts (deploy/monitoring/rules.yaml), their unit tests, the
 * PrometheusRule generated from them, their runbooks in docs/operating.md, and the Grafana
 * dashboard. promtool (Debian's `prometheus` package) checks the rules, runs their unit tests and
 * parses every expression of the dashboard; a gateway built here proves that every metric the
 * rules, the dashboard and the streams autoscaler name is one it serves, with the labels they use.
 */

const promtool = installed('/usr/bin/promtool', 'promtool', 'apt-get install prometheus');

const RULES = 'deploy/monitoring/rules.yaml';
const RULE_TESTS = 'deploy/monitoring/rules.test.yaml';
const PROMETHEUS_RULE = 'deploy/k8s/components/monitoring/prometheusrule.yaml';
const DASHBOARD = 'deploy/grafana/chain-gateway.json';
const RUNBOOKS = 'docs/operating.md';
/** Where the runbook URLs point: one prefix, so that an operator's search and replace is safe. */
const RUNBOOK_PREFIX = 'https://git.example/chain-gateway/blob/main/docs/operating.md#';
/** Labels Prometheus adds to every series it scrapes through the PodMonitor. */
const TARGET_LABELS = ['namespace', 'pod', 'container', 'endpoint', 'instance', 'job'];

interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}
/** A recording rule: the SLIs, recorded per namespace and window. */
interface RecordingRule {
  record: string;
  expr: string;
  labels?: Record<string, string>;
}
const groups: { name: string; rules: (AlertRule | RecordingRule)[] }[] = parse(
  readFileSync(RULES, 'utf8'),
).groups;
const rules = groups.flatMap((group) => group.rules);
const alerts = rules.filter((rule): rule is AlertRule => 'alert' in rule);
const records = rules.filter((rule): rule is RecordingRule => 'record' in rule);
const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8'));
const panels: any[] = dashboard.panels.filter((panel: any) => panel.type !== 'row');
const dashboardExprs: { id: string; expr: string }[] = panels.flatMap((panel) =>
  panel.targets.map((target: any) => ({ id: `${panel.id}_${target.refId}`, expr: target.expr })),
);
/** Grafana's own variables, each given the value Prometheus sees on a dashboard at its defaults. */
const withGrafanaDefaults = (expr: string) => expr.replaceAll('$__rate_interval', '5m');

/** The metrics one PromQL expression reads, the labels its matchers name, and those it groups by. */
function namesIn(expr: string): { metrics: Map<string, Set<string>>; grouping: Set<string> } {
  const metrics = new Map<string, Set<string>>();
  const grouping = new Set<string>();
  const add = (name: string, labels: string[] = []) => {
    const known = metrics.get(name) ?? new Set<string>();
    for (const label of labels) known.add(label);
    metrics.set(name, known);
  };
  const text = expr
    // String literals (label values, Grafana's "$namespace") hold no name.
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g, (_, list: string) => {
      for (const label of list.split(',').map((l) => l.trim())) if (label) grouping.add(label);
      return ' ';
    })
    .replace(/([A-Za-z_:][\w:]*)?\s*\{([^}]*)\}/g, (_, name: string | undefined, matchers: string) => {
      const labels = [...matchers.matchAll(/([A-Za-z_]\w*)\s*(?:=~|!~|!=|=)/g)].map((m) => m[1] as string);
      if (name) add(name, labels);
      return ` ${name ?? ''} `;
    })
    // Ranges, subqueries and durations.
    .replace(/\[[^\]]*\]/g, ' ');
  const keywords = new Set(['by', 'without', 'on', 'ignoring', 'bool', 'and', 'or', 'unless', 'offset']);
  for (const [, token, call] of text.matchAll(/([\w.:]+)(\s*\()?/g)) {
    // Functions and aggregations are called; numbers and durations start with a digit.
    if (call || /^[\d.]/.test(token as string) || keywords.has(token as string)) continue;
    add(token as string);
  }
  return { metrics, grouping };
}

/** A Prometheus rule file, as promtool reads it, in a directory of its own. */
function ruleFile(content: unknown): { path: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'gateway-rules-'));
  const path = join(dir, 'rules.yaml');
  writeFileSync(path, typeof content === 'string' ? content : stringify(content));
  return { path, dir };
}

/** Each dashboard expression as a recording rule, which `promtool check rules` parses. */
async function checkExpressions(exprs: { id: string; expr: string }[]) {
  const { path, dir } = ruleFile({
    groups: [
      {
        name: 'dashboard',
        rules: exprs.map(({ id, expr }) => ({
          record: `dashboard:panel_${id}`,
          expr: withGrafanaDefaults(expr),
        })),
      },
    ],
  });
  try {
    return await run('promtool', ['check', 'rules', path]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The GitHub anchor of a Markdown heading. */
const anchor = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^\w\- ]/g, '')
    .replace(/ /g, '-');

/** docs/operating.md's sections, by anchor: the text from a heading to the next. */
function runbookSections(): Map<string, string> {
  const sections = new Map<string, string>();
  // Code blocks hold shell comments, which are not headings.
  const text = readFileSync(RUNBOOKS, 'utf8').replace(/```[\s\S]*?```/g, '');
  const headings = [...text.matchAll(/^#{1,6} (.+)$/gm)];
  headings.forEach((heading, i) => {
    const end = headings[i + 1]?.index ?? text.length;
    sections.set(anchor(heading[1] as string), text.slice(heading.index, end));
  });
  return sections;
}

/** The PrometheusRule of the monitoring component, as generated from rules.yaml. */
const generatedPrometheusRule = () =>
  [
    '# Generated from deploy/monitoring/rules.yaml by test/deploy/monitoring.test.ts: do not edit. Change',
    '# the rules there, then run `npx vitest run --project deploy test/deploy/monitoring.test.ts -u`.',
    stringify(
      {
        apiVersion: 'monitoring.coreos.com/v1',
        kind: 'PrometheusRule',
        metadata: {
          name: 'chain-gateway',
          labels: { 'app.kubernetes.io/name': 'chain-gateway', 'app.kubernetes.io/component': 'gateway' },
        },
        spec: { groups },
      },
      { lineWidth: 0 },
    ),
  ].join('\n');

describe('deploy/monitoring/rules.yaml: the alerts', () => {
  it('are all the issue asks for, each with a severity and a runbook in docs/operating.md', () => {
    expect(alerts.map((rule) => rule.alert)).toEqual([
      'ChainGatewayAvailabilityBudgetBurn',
      'ChainGatewayAvailabilityBudgetBurnSlow',
      'ChainGatewayLatencyBudgetBurn',
      'ChainGatewayLatencyBudgetBurnSlow',
      'ChainGatewayDown',
      'ChainGatewayRateLimitedShareHigh',
      'ChainGatewayLiveStalled',
      'ChainGatewayRedisCommandsFailing',
      'ChainGatewayUpstreamCircuitOpen',
      'ChainGatewayRedisDown',
      'ChainGatewayConnectionsRefused',
      'ChainGatewaySubscriptionsNearLimit',
      'ChainGatewayLivePollsFailing',
      'ChainGatewaySubscribersCut',
      'ChainGatewayRedisValuesRejected',
      'ChainGatewayIntakeRefusals',
    ]);
    const sections = runbookSections();
    for (const rule of alerts) {
      expect(['critical', 'warning'], rule.alert).toContain(rule.labels.severity);
      expect(rule.annotations.runbook_url).toBe(`${RUNBOOK_PREFIX}${rule.alert.toLowerCase()}`);
      // The section's heading is the alert's name; it says what the alert means, what to check and
      // what to do.
      const section = sections.get(rule.alert.toLowerCase());
      expect(section, `docs/operating.md has no section ${rule.alert}`).toBeDefined();
      expect(section).toMatch(/\*\*Means\*\*[\s\S]*\*\*Check\*\*[\s\S]*\*\*Do\*\*/);
    }
  });

  it("holds the near-limit alert at 80 % of each pod's own cap, and the streams autoscaler below it", () => {
    const base = parse(readFileSync('deploy/k8s/base/kustomization.yaml', 'utf8'));
    const literal = (base.configMapGenerator[0].literals as string[]).find((l) =>
      l.startsWith('MAX_SUBSCRIPTIONS='),
    );
    const max = Number(literal?.split('=')[1]);
    expect(max).toBe(10_000);
    // The cap is the pod's graphql_subscriptions_limit (MAX_SUBSCRIPTIONS as capped at start), not a
    // figure copied here: a change of MAX_SUBSCRIPTIONS moves the alert with it.
    const near = alerts.find((rule) => rule.alert === 'ChainGatewaySubscriptionsNearLimit');
    expect(near?.expr).toBe(
      'max by (namespace, pod) (graphql_subscriptions_active)\n  > 0.8 * max by (namespace, pod) (graphql_subscriptions_limit)',
    );
    const streams = parse(
      readFileSync('deploy/k8s/components/streams-autoscaling/kustomization.yaml', 'utf8'),
    );
    const [added] = parse(streams.patches[0].patch);
    expect(added.value.pods.metric.name).toBe('graphql_subscriptions_active');
    expect(Number(added.value.pods.target.averageValue)).toBe(0.5 * max);
  });

  it('page on burn rates of the SLOs as the SRE workbook gives them, against the recorded objectives', () => {
    const objective = (slo: string) =>
      Number(
        records
          .find((r) => r.record === 'chain_gateway:slo_objective:ratio' && r.labels?.slo === slo)
          ?.expr.match(/^vector\((.+)\)$/)?.[1],
      );
    expect([objective('availability'), objective('latency')]).toEqual([0.995, 0.99]);
    // Each alert: per (long, short) window pair, the burn-rate factor times the budget (1 - objective),
    // and the minimum traffic over the long window.
    const conditions = (rule: AlertRule | undefined) =>
      [
        ...(rule?.expr ?? '').matchAll(
          /namespace:graphql_answers_(\w+):ratio_rate(\w+) > \(([\d.]+) \* ([\d.]+)\)/g,
        ),
      ].map(([, sli, window, factor, budget]) => `${sli} ${window} ${factor} ${budget}`);
    const guards = (rule: AlertRule | undefined) =>
      [...(rule?.expr ?? '').matchAll(/namespace:graphql_answers:rate(\w+) > 1\/60/g)].map(
        ([, window]) => window,
      );
    const burn = (name: string) => alerts.find((rule) => rule.alert === name);
    for (const [sli, slo] of [
      ['failed', 'availability'],
      ['slow', 'latency'],
    ] as const) {
      const prefix = slo === 'availability' ? 'ChainGatewayAvailability' : 'ChainGatewayLatency';
      const budget = Number((1 - objective(slo)).toFixed(6));
      const fast = burn(`${prefix}BudgetBurn`);
      const slow = burn(`${prefix}BudgetBurnSlow`);
      expect(conditions(fast)).toEqual([
        `${sli} 1h 14.4 ${budget}`,
        `${sli} 5m 14.4 ${budget}`,
        `${sli} 6h 6 ${budget}`,
        `${sli} 30m 6 ${budget}`,
      ]);
      expect(guards(fast)).toEqual(['1h', '6h']);
      expect(conditions(slow)).toEqual([`${sli} 3d 1 ${budget}`, `${sli} 6h 1 ${budget}`]);
      expect(guards(slow)).toEqual(['3d']);
      expect([fast?.labels, slow?.labels]).toEqual([
        { severity: 'critical', slo },
        { severity: 'warning', slo },
      ]);
    }
    // Every series the alerts read by a recorded name is recorded.
    const recorded = new Set(records.map((r) => r.record));
    for (const rule of alerts)
      for (const name of namesIn(rule.expr).metrics.keys())
        if (name.includes(':')) expect(recorded, `${rule.alert}: ${name}`).toContain(name);
  });

  it('are what the monitoring component deploys (its PrometheusRule is generated from them)', async () => {
    const component = parse(readFileSync('deploy/k8s/components/monitoring/kustomization.yaml', 'utf8'));
    expect(component.resources).toContain('prometheusrule.yaml');
    await expect(generatedPrometheusRule()).toMatchFileSnapshot(`../../${PROMETHEUS_RULE}`);
    expect(parse(readFileSync(PROMETHEUS_RULE, 'utf8')).spec.groups).toEqual(groups);
  });
});

describe.skipIf(!promtool)('promtool', () => {
  it('checks the rule file clean', async () => {
    const checked = await run('promtool', ['check', 'rules', RULES]);
    expect(checked.stderr).toBe('');
    expect(checked.stdout).toContain(`SUCCESS: ${rules.length} rules found`);
    expect(checked.code).toBe(0);
  });

  it("passes the rules' unit tests, which fire every alert", async () => {
    const tests = parse(readFileSync(RULE_TESTS, 'utf8'));
    const fired = new Set<string>(
      tests.tests.flatMap((test: any) =>
        test.alert_rule_test.filter((t: any) => t.exp_alerts.length > 0).map((t: any) => t.alertname),
      ),
    );
    expect([...fired].sort()).toEqual(alerts.map((rule) => rule.alert).sort());
    const tested = await run('promtool', ['test', 'rules', RULE_TESTS]);
    expect(tested.stdout).toContain('SUCCESS');
    expect(tested.code).toBe(0);
  });

  it('fails those unit tests when an alert changes (they test the rules, not themselves)', async () => {
    const changed = readFileSync(RULES, 'utf8').replace(
      '> 0.8 * max by (namespace, pod) (graphql_subscriptions_limit)',
      '> 0.9 * max by (namespace, pod) (graphql_subscriptions_limit)',
    );
    expect(changed).not.toBe(readFileSync(RULES, 'utf8'));
    const { dir } = ruleFile(changed);
    writeFileSync(join(dir, 'rules.test.yaml'), readFileSync(RULE_TESTS));
    try {
      const tested = await run('promtool', ['test', 'rules', join(dir, 'rules.test.yaml')]);
      expect(tested.code).toBe(1);
      expect(tested.stdout + tested.stderr).toContain('alertname: ChainGatewaySubscriptionsNearLimit');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('parses every expression of the dashboard, and refuses one that is not PromQL', async () => {
    expect(dashboardExprs.length).toBeGreaterThan(30);
    for (const { expr } of dashboardExprs) {
      // Grafana's variables only where PromQL takes a string (a label's value), or as a range.
      expect(expr.replace(/"[^"]*"/g, '""').replaceAll('[$__rate_interval]', '')).not.toContain('$');
    }
    const checked = await checkExpressions(dashboardExprs);
    expect(checked.stdout).toContain(`SUCCESS: ${dashboardExprs.length} rules found`);
    expect(checked.code).toBe(0);
    const broken = await checkExpressions([{ id: 'broken', expr: 'sum(rate(graphql_requests_total[5m])' }]);
    expect(broken.code).toBe(1);
  });
});

describe('deploy/grafana/chain-gateway.json', () => {
  it('asks for a Prometheus data source and a namespace, and has a panel for each thing the issue names', () => {
    expect(dashboard.uid).toBe('chain-gateway');
    expect(dashboard.templating.list.map((v: any) => [v.name, v.type])).toEqual([
      ['datasource', 'datasource'],
      ['namespace', 'query'],
      ['pod', 'query'],
    ]);
    for (const panel of panels) {
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable, which it fills itself
      expect(panel.datasource, panel.title).toEqual({ type: 'prometheus', uid: '${datasource}' });
      for (const target of panel.targets) expect(target.expr).toContain('namespace="$namespace"');
    }
    const ids = dashboard.panels.map((panel: any) => panel.id);
    expect(new Set(ids).size).toBe(ids.length);
    const reads = (metric: string) =>
      panels.filter((panel) => panel.targets.some((t: any) => t.expr.includes(metric))).length;
    for (const metric of [
      'graphql_requests_total',
      'graphql_errors_total',
      'graphql_request_duration_seconds_bucket',
      'upstream_requests_total',
      'upstream_circuit_state',
      'cache_requests_total',
      'shared_cache_requests_total',
      'graphql_subscriptions_active',
      'graphql_subscription_groups',
      'live_delivery_seconds_bucket',
      'live_polls_total',
      'rate_limited_requests_total',
    ])
      expect(reads(metric), metric).toBeGreaterThan(0);
  });
});

describe.skipIf(!hasRedis)('every metric the rules, the dashboard and the autoscaler name', () => {
  let redis: TestRedis;
  let gateway: Gateway;
  /** Each series name the gateway serves, with the labels it carries. */
  const served = new Map<string, Set<string>>();

  beforeAll(async () => {
    redis = await startRedis();
    // REDIS_URL: redis_up exists only with Redis. No upstream is called: nothing is asked.
    gateway = createGateway({
      ...loadConfig({ REDIS_URL: redis.url }),
      upstreamUrls: {
        scan: 'http://127.0.0.1:9',
        explorer: 'http://127.0.0.1:9',
        stake: 'http://127.0.0.1:9',
      },
    });
    // What /metrics serves: every registered metric prints its TYPE before any observation.
    const text = await gateway.metrics.registry.metrics();
    for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
      const metric = gateway.metrics.registry.getSingleMetric(name as string) as unknown as {
        labelNames: string[];
      };
      const labels = new Set([...metric.labelNames, ...TARGET_LABELS]);
      if (type === 'histogram') {
        served.set(`${name}_bucket`, new Set([...labels, 'le']));
        served.set(`${name}_sum`, labels);
        served.set(`${name}_count`, labels);
      } else served.set(name as string, labels);
    }
    // Prometheus' own series of each scrape, with the target's labels.
    served.set('up', new Set(TARGET_LABELS));
    // The recorded SLIs: what their aggregation keeps, and the labels the rule adds.
    for (const rule of records) {
      const labels = new Set([...namesIn(rule.expr).grouping, ...Object.keys(rule.labels ?? {})]);
      served.set(rule.record, new Set([...(served.get(rule.record) ?? []), ...labels]));
    }
  });
  afterAll(async () => {
    await gateway?.close();
    await redis?.close();
  });

  /** What an expression names that the gateway does not serve: metrics, and labels of its matchers. */
  const unknownIn = (expr: string): string[] => {
    const { metrics, grouping } = namesIn(expr);
    const unknown: string[] = [];
    const anyLabels = new Set<string>(TARGET_LABELS);
    for (const [metric, labels] of metrics) {
      const known = served.get(metric);
      if (!known) {
        unknown.push(metric);
        continue;
      }
      for (const label of known) anyLabels.add(label);
      for (const label of labels) if (!known.has(label)) unknown.push(`${metric}{${label}}`);
    }
    for (const label of grouping) if (!anyLabels.has(label)) unknown.push(`by (${label})`);
    return unknown;
  };

  it('finds the names in an expression, and misses none that is misspelt (the check is not a no-op)', () => {
    const { metrics, grouping } = namesIn(
      'histogram_quantile(0.99, sum by (namespace, le) (rate(graphql_request_duration_seconds_bucket{pod=~"$pod"}[5m]))) > 2.5 and on () redis_up == 1e3',
    );
    expect([...metrics.keys()].sort()).toEqual(['graphql_request_duration_seconds_bucket', 'redis_up']);
    expect([...(metrics.get('graphql_request_duration_seconds_bucket') ?? [])]).toEqual(['pod']);
    expect([...grouping].sort()).toEqual(['le', 'namespace']);
    // A misspelt metric; the label it is grouped by is then known of no metric either.
    expect(unknownIn('sum by (operation) (rate(graphql_request_total{outcome="error"}[5m]))')).toEqual([
      'graphql_request_total',
      'by (operation)',
    ]);
    expect(unknownIn('sum by (status) (rate(graphql_requests_total{code="x"}[5m]))')).toEqual([
      'graphql_requests_total{code}',
      'by (status)',
    ]);
  });

  it('the rules name only metrics a gateway serves (or Prometheus records from them)', () => {
    const recorded = new Set(records.map((r) => r.record));
    const named = new Set(rules.flatMap((rule) => [...namesIn(rule.expr).metrics.keys()]));
    expect([...named].filter((name) => !recorded.has(name)).sort()).toEqual([
      'graphql_request_duration_seconds_bucket',
      'graphql_request_duration_seconds_count',
      'graphql_requests_total',
      'graphql_subscriptions_active',
      'graphql_subscriptions_limit',
      'http_connections_refused_total',
      'http_requests_refused_total',
      'live_events_total',
      'live_polls_total',
      'live_subscribers_cut_total',
      'redis_errors_total',
      'redis_rejected_total',
      'redis_up',
      'up',
      'upstream_circuit_state',
    ]);
    for (const rule of rules)
      expect(unknownIn(rule.expr), 'alert' in rule ? rule.alert : rule.record).toEqual([]);
  });

  it('the dashboard, its variables and the streams autoscaler name only metrics a gateway serves', () => {
    for (const { id, expr } of dashboardExprs) expect(unknownIn(expr), `panel ${id}: ${expr}`).toEqual([]);
    for (const variable of dashboard.templating.list.filter((v: any) => v.type === 'query')) {
      const [, selector, label] = /^label_values\((.+), (\w+)\)$/.exec(variable.query.query) ?? [];
      expect(unknownIn(selector as string), variable.name).toEqual([]);
      expect(TARGET_LABELS).toContain(label);
    }
    expect(served.has('graphql_subscriptions_active')).toBe(true);
  });
});
