import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import * as apps from 'kubernetes-models/apps/v1';
import * as autoscaling from 'kubernetes-models/autoscaling/v2';
import * as networking from 'kubernetes-models/networking.k8s.io/v1';
import * as policy from 'kubernetes-models/policy/v1';
import * as core from 'kubernetes-models/v1';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { installed } from '../support/binaries.js';
import { run } from './podman.js';

/**
 * deploy/k8s: every overlay rendered by `kubectl kustomize`, alone and with the components, each
 * object checked against the Kubernetes API's schemas (kubernetes-models, Kubernetes 1.27's
 * OpenAPI; the Prometheus Operator's kinds, which it has no model of, by their fields), then
 * against what the gateway needs: the image's own command as its non-root user on a read-only root,
 * probes on /healthz and /readyz, /metrics on a port no Service exposes, a grace period past the
 * drain, memory for the heap cap and MAX_SUBSCRIPTIONS streams, a Redis only gateways reach and
 * that can evict nothing live, and names, selectors and ports that meet. The overlay docs/deploy.md
 * gives an operator is rendered too. kubernetes-models accepts fields it does not know, so each
 * field the gateway relies on is read here by its path: a misspelt one reads as undefined and fails.
 */

const kubectl = installed(
  '/usr/bin/kubectl',
  'kubectl',
  'the Google Cloud CLI (package kubectl); kustomize v4 or later, so not Debian’s kubernetes-client 1.20',
);

type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: any; annotations?: any };
  [key: string]: any;
};

async function renderDirectory(dir: string): Promise<K8sObject[]> {
  const rendered = await run('kubectl', ['kustomize', dir]);
  if (rendered.code !== 0) throw new Error(`kubectl kustomize ${dir} failed: ${rendered.stderr}`);
  return parseAllDocuments(rendered.stdout).map((doc) => doc.toJS() as K8sObject);
}

/** A kustomization in a directory of its own, naming the repository's directories by relative path. */
async function renderKustomization(
  make: (path: (repoPath: string) => string) => string,
): Promise<K8sObject[]> {
  const dir = mkdtempSync(join(tmpdir(), 'gateway-kustomize-'));
  const overlay = join(dir, 'my-gateway');
  mkdirSync(overlay);
  try {
    writeFileSync(
      join(overlay, 'kustomization.yaml'),
      make((repoPath) => relative(overlay, resolve(repoPath))),
    );
    return await renderDirectory(overlay);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** An overlay of deploy/k8s/overlays, with components of deploy/k8s/components added on top. */
function render(overlay: string, components: string[] = []): Promise<K8sObject[]> {
  if (components.length === 0) return renderDirectory(`deploy/k8s/overlays/${overlay}`);
  return renderKustomization((path) =>
    stringify({
      apiVersion: 'kustomize.config.k8s.io/v1beta1',
      kind: 'Kustomization',
      resources: [path(`deploy/k8s/overlays/${overlay}`)],
      components: components.map((component) => path(`deploy/k8s/components/${component}`)),
    }),
  );
}

/** The API groups the manifests use: an object of any other is refused. */
const MODELS: Record<string, Record<string, any>> = {
  v1: core,
  'apps/v1': apps,
  'autoscaling/v2': autoscaling,
  'policy/v1': policy,
  'networking.k8s.io/v1': networking,
};

/** The Prometheus Operator's kinds (monitoring.coreos.com/v1): the fields it requires, by path. */
function validateOperatorKind(object: K8sObject): void {
  const isText = (value: unknown) => typeof value === 'string' && value.length > 0;
  const fail = (what: string) => {
    throw new Error(`${object.kind} ${object.metadata.name}: ${what}`);
  };
  if (object.kind === 'PodMonitor') {
    const labels = object.spec?.selector?.matchLabels;
    if (typeof labels !== 'object' || Object.keys(labels).length === 0) fail('spec/selector/matchLabels');
    const endpoints = object.spec.podMetricsEndpoints;
    if (!Array.isArray(endpoints) || endpoints.length === 0) fail('spec/podMetricsEndpoints');
    for (const endpoint of endpoints) if (!isText(endpoint.port)) fail('spec/podMetricsEndpoints/port');
    return;
  }
  if (object.kind === 'PrometheusRule') {
    const groups = object.spec?.groups;
    if (!Array.isArray(groups) || groups.length === 0) fail('spec/groups');
    for (const group of groups) {
      if (!isText(group.name) || !Array.isArray(group.rules)) fail('spec/groups/name or rules');
      for (const rule of group.rules)
        if (!isText(rule.alert) || !isText(rule.expr)) fail('spec/groups/rules');
    }
    return;
  }
  fail(`no check for ${object.apiVersion} ${object.kind}`);
}

/** Checks one object against its kind's schema; throws with every violation. */
async function validate(object: K8sObject): Promise<void> {
  if (object.apiVersion === 'monitoring.coreos.com/v1') return validateOperatorKind(object);
  const Model = MODELS[object.apiVersion]?.[object.kind];
  if (!Model) throw new Error(`no schema for ${object.apiVersion} ${object.kind}`);
  new Model(object).validate();
}

const UNITS: Record<string, number> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  '': 1,
};

/** A Kubernetes memory quantity (`768Mi`, `1G`) in bytes. */
function bytes(quantity: string): number {
  const [, value, unit = ''] = /^(\d+)([A-Za-z]*)$/.exec(quantity) ?? [];
  if (value === undefined || !(unit in UNITS)) throw new Error(`not a memory quantity: ${quantity}`);
  return Number(value) * (UNITS[unit] as number);
}

/** A Redis memory figure (`256mb`: Redis' mb is 2^20 bytes) in bytes. */
function redisBytes(figure: string): number {
  const [, value, unit = ''] = /^(\d+)(kb|mb|gb)?$/.exec(figure) ?? [];
  if (value === undefined) throw new Error(`not a Redis memory figure: ${figure}`);
  return Number(value) * ({ kb: 2 ** 10, mb: 2 ** 20, gb: 2 ** 30, '': 1 }[unit] as number);
}

const one = (objects: K8sObject[], kind: string, name: string): K8sObject => {
  const found = objects.filter((o) => o.kind === kind && o.metadata.name === name);
  expect(found, `${kind} ${name}`).toHaveLength(1);
  return found[0] as K8sObject;
};
const byPrefix = (objects: K8sObject[], kind: string, prefix: string): K8sObject => {
  const found = objects.filter((o) => o.kind === kind && o.metadata.name.startsWith(`${prefix}-`));
  expect(found, `${kind} ${prefix}-<hash>`).toHaveLength(1);
  return found[0] as K8sObject;
};
/** Whether a label selector's matchLabels take a pod with these labels. */
const selects = (matchLabels: Record<string, string>, labels: Record<string, string>) =>
  Object.keys(matchLabels).length > 0 && Object.entries(matchLabels).every(([k, v]) => labels[k] === v);
const podLabelsOf = (objects: K8sObject[], deployment: string) =>
  one(objects, 'Deployment', deployment).spec.template.metadata.labels as Record<string, string>;

/** Each object as `Kind name`, sorted, kustomize's content hash in a name shown as `<hash>`. */
const kindsAndNames = (objects: K8sObject[]) =>
  objects.map((o) => `${o.kind} ${o.metadata.name.replace(/-[a-z0-9]{10}$/, '-<hash>')}`).sort();

/** `npm start`'s V8 flags, from package.json: the heap the memory limit must hold. */
const START: string = JSON.parse(readFileSync('package.json', 'utf8')).scripts.start;
const V8_MB = (flag: string) => Number(new RegExp(`--${flag}=(\\d+)`).exec(START)?.[1]);
/** The image's user (Dockerfile `USER uid:gid`). */
const IMAGE_USER = /^USER (\d+):(\d+)$/m.exec(readFileSync('Dockerfile', 'utf8'))?.slice(1).map(Number);
/** docs/live.md: an idle process's RSS and each open stream's, measured with 10,000 streams. */
const IDLE_BYTES = 110e6;
const STREAM_BYTES = 30e3;
const GATEWAY_OBJECTS = [
  'ConfigMap chain-gateway-<hash>',
  'Deployment chain-gateway',
  'NetworkPolicy chain-gateway',
  'PodDisruptionBudget chain-gateway',
  'Service chain-gateway',
];

/** The gateway container: its image, user, root file system, settings and secrets. */
function checkContainer(pod: any, config: K8sObject) {
  expect(pod.containers).toHaveLength(1);
  const [container] = pod.containers;
  // The image's own command (`npm start`'s), as its own non-root user, on a read-only root.
  expect(container.command).toBeUndefined();
  expect(container.args).toBeUndefined();
  expect(IMAGE_USER).toEqual([10001, 10001]);
  expect(pod.securityContext).toMatchObject({
    runAsNonRoot: true,
    runAsUser: IMAGE_USER?.[0],
    runAsGroup: IMAGE_USER?.[1],
    seccompProfile: { type: 'RuntimeDefault' },
  });
  expect(container.securityContext).toEqual({
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    capabilities: { drop: ['ALL'] },
  });
  expect(container.volumeMounts).toEqual([{ name: 'tmp', mountPath: '/tmp' }]);
  expect(pod.volumes).toEqual([{ name: 'tmp', emptyDir: { sizeLimit: '64Mi' } }]);
  expect(pod.enableServiceLinks).toBe(false);
  expect(pod.automountServiceAccountToken).toBe(false);
  // Settings from the generated ConfigMap under its hashed name; secrets from the Secret you make.
  expect(container.envFrom[0]).toEqual({ configMapRef: { name: config.metadata.name } });
  expect(container.envFrom[1].secretRef.name).toBe('chain-gateway');
  expect(config.data.WORKERS).toBe('1');
  // The pod's identity, through the Downward API, on every span; each $(NAME) defined before its use.
  const env: { name: string; value?: string; valueFrom?: any }[] = container.env;
  const fieldOf = (name: string) => env.find((e) => e.name === name)?.valueFrom?.fieldRef?.fieldPath;
  expect([fieldOf('POD_NAME'), fieldOf('POD_NAMESPACE'), fieldOf('NODE_NAME')]).toEqual([
    'metadata.name',
    'metadata.namespace',
    'spec.nodeName',
  ]);
  expect(env.find((e) => e.name === 'OTEL_RESOURCE_ATTRIBUTES')?.value).toBe(
    'k8s.pod.name=$(POD_NAME),k8s.namespace.name=$(POD_NAMESPACE),k8s.node.name=$(NODE_NAME)',
  );
  env.forEach((entry, i) => {
    for (const [, name] of (entry.value ?? '').matchAll(/\$\(([A-Z_]+)\)/g))
      expect(
        env.findIndex((e) => e.name === name),
        `${entry.name} uses $(${name})`,
      ).toBeLessThan(i);
  });
  return container;
}

/** Ports, probes, grace period and memory of the gateway container. */
function checkServing(pod: any, container: any, config: K8sObject) {
  // The serving port and the metrics port, each the one the gateway listens on; probes on the first.
  expect(container.ports).toEqual([
    { name: 'http', containerPort: Number(config.data.PORT), protocol: 'TCP' },
    { name: 'metrics', containerPort: Number(config.data.METRICS_PORT), protocol: 'TCP' },
  ]);
  expect(config.data.METRICS_PORT).toBe('9464');
  expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
  expect(container.startupProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
  expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'http' });

  // SIGTERM to SIGKILL: past SHUTDOWN_DELAY_MS, then the drain's deadline (UPSTREAM_TIMEOUT_MS + 5 s,
  // src/main.ts), and the cluster primary's 5 s more when WORKERS > 1.
  const drainMs = Number(config.data.SHUTDOWN_DELAY_MS) + Number(config.data.UPSTREAM_TIMEOUT_MS) + 5_000;
  expect(drainMs).toBe(15_000);
  expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThan(drainMs + 5_000);

  // Memory: the whole heap cap (old space, and the three semi-spaces of the young generation) beside
  // what an idle process holds, and MAX_SUBSCRIPTIONS streams at their measured size.
  const limit = bytes(container.resources.limits.memory);
  const heap = (V8_MB('max-old-space-size') + 3 * V8_MB('max-semi-space-size')) * 2 ** 20;
  expect(heap).toBe(560 * 2 ** 20);
  expect(limit).toBeGreaterThan(heap + IDLE_BYTES);
  expect(limit).toBeGreaterThan(IDLE_BYTES + Number(config.data.MAX_SUBSCRIPTIONS) * STREAM_BYTES);
  expect(bytes(container.resources.requests.memory)).toBeLessThanOrEqual(limit);
  expect(container.resources.requests.cpu).toBe('500m');
}

/** What every overlay shares: the gateway's Deployment, Service, ConfigMap, PDB and NetworkPolicy. */
function checkGateway(objects: K8sObject[]) {
  const deployment = one(objects, 'Deployment', 'chain-gateway');
  const config = byPrefix(objects, 'ConfigMap', 'chain-gateway');
  const pod = deployment.spec.template.spec;
  const podLabels = deployment.spec.template.metadata.labels;
  expect(podLabels).toEqual({
    'app.kubernetes.io/name': 'chain-gateway',
    'app.kubernetes.io/component': 'gateway',
  });
  expect(deployment.spec.selector.matchLabels).toEqual(podLabels);
  expect(deployment.spec.strategy.rollingUpdate).toEqual({ maxSurge: 1, maxUnavailable: 0 });
  const container = checkContainer(pod, config);
  checkServing(pod, container, config);

  // The Service and the disruption budget select exactly these pods; the Service serves, and only that.
  const service = one(objects, 'Service', 'chain-gateway');
  expect(service.spec.selector).toEqual(podLabels);
  expect(service.spec.ports).toEqual([{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }]);
  const pdb = one(objects, 'PodDisruptionBudget', 'chain-gateway');
  expect(pdb.spec).toEqual({
    maxUnavailable: 1,
    unhealthyPodEvictionPolicy: 'AlwaysAllow',
    selector: { matchLabels: podLabels },
  });
  checkGatewayEgress(objects, podLabels);
  return { deployment, config, container, podLabels };
}

/** The gateway pods reach DNS, the upstreams' ports, Redis pods and collector pods, and nothing else. */
function checkGatewayEgress(objects: K8sObject[], podLabels: Record<string, string>) {
  const egress = one(objects, 'NetworkPolicy', 'chain-gateway');
  expect(egress.spec.podSelector.matchLabels).toEqual(podLabels);
  expect(egress.spec.policyTypes).toEqual(['Egress']);
  const rules = egress.spec.egress.map((rule: any) => ({
    to:
      rule.to?.map((peer: any) => peer.podSelector.matchLabels['app.kubernetes.io/component']) ?? 'anywhere',
    ports: rule.ports.map((p: any) => `${p.protocol}/${p.port}`),
  }));
  expect(rules).toEqual([
    { to: 'anywhere', ports: ['UDP/53', 'TCP/53'] },
    { to: 'anywhere', ports: ['TCP/443', 'TCP/80'] },
    { to: ['redis'], ports: ['TCP/6379'] },
    { to: ['otel-collector'], ports: ['TCP/4318'] },
  ]);
  for (const rule of egress.spec.egress.slice(2))
    expect(rule.to[0].podSelector.matchLabels['app.kubernetes.io/name']).toBe('chain-gateway');
}

/** Every overlay, alone and with the components that fit it. */
const RENDERS: { overlay: string; components: string[] }[] = [
  { overlay: 'devnet', components: [] },
  { overlay: 'devnet', components: ['monitoring'] },
  { overlay: 'devnet', components: ['ingress'] },
  { overlay: 'single', components: [] },
  { overlay: 'single', components: ['monitoring'] },
  { overlay: 'single', components: ['ingress'] },
  { overlay: 'single', components: ['ingress', 'monitoring'] },
  { overlay: 'scaled', components: [] },
  { overlay: 'scaled', components: ['monitoring'] },
  { overlay: 'scaled', components: ['ingress'] },
  { overlay: 'scaled', components: ['streams-autoscaling'] },
  { overlay: 'scaled', components: ['ingress', 'monitoring', 'streams-autoscaling'] },
];

describe.skipIf(!kubectl)('deploy/k8s', () => {
  for (const { overlay, components } of RENDERS) {
    it(`renders the ${overlay} overlay with components ${JSON.stringify(components)} into objects valid against their schemas`, async () => {
      const objects = await render(overlay, components);
      expect(kindsAndNames(objects)).toEqual(expect.arrayContaining(GATEWAY_OBJECTS));
      for (const object of objects) await expect(validate(object)).resolves.toBeUndefined();
      checkGateway(objects);
    });
  }

  it('rejects an object that breaks its schema (the check is not a no-op)', async () => {
    const objects = await render('scaled', ['monitoring']);
    const deployment = structuredClone(one(objects, 'Deployment', 'chain-gateway'));
    deployment.spec.template.spec.containers[0].resources.limits.memory = 'lots';
    await expect(validate(deployment)).rejects.toThrow(/resources\/limits\/memory/);
    const policy = structuredClone(one(objects, 'NetworkPolicy', 'redis'));
    policy.spec.ingress[0].ports[0].protocol = 7;
    await expect(validate(policy)).rejects.toThrow(/ingress\/0\/ports\/0\/protocol/);
    const monitor = structuredClone(one(objects, 'PodMonitor', 'chain-gateway'));
    monitor.spec.podMetricsEndpoints[0].targetPort = monitor.spec.podMetricsEndpoints[0].port;
    delete monitor.spec.podMetricsEndpoints[0].port;
    await expect(validate(monitor)).rejects.toThrow(/podMetricsEndpoints\/port/);
  });

  it('devnet: one pod on the embedded devnet, asked for by name, with no Secret needed', async () => {
    const objects = await render('devnet');
    expect(kindsAndNames(objects)).toEqual(GATEWAY_OBJECTS);
    const { deployment, config, container } = checkGateway(objects);
    expect(deployment.spec.replicas).toBe(1);
    expect(config.data.DEVNET).toBe('true');
    expect(Object.keys(config.data).filter((key) => key.endsWith('_URL'))).toEqual([]);
    expect(container.envFrom[1]).toEqual({ secretRef: { name: 'chain-gateway', optional: true } });
  });

  it('single: one pod that needs its Secret and upstreams, and no devnet, Redis or autoscaler', async () => {
    const objects = await render('single');
    expect(kindsAndNames(objects)).toEqual(GATEWAY_OBJECTS);
    const { deployment, config, container } = checkGateway(objects);
    expect(deployment.spec.replicas).toBe(1);
    expect(config.data.DEVNET).toBeUndefined();
    expect(Object.keys(config.data).filter((key) => key.endsWith('_URL'))).toEqual([]);
    expect(container.envFrom[1]).toEqual({ secretRef: { name: 'chain-gateway' } });
    expect(container.env.map((e: any) => e.name)).not.toContain('REDIS_URL');
  });

  it('scaled: 3 to 10 gateway pods by CPU, spread over nodes, sharing the Redis beside them', async () => {
    const objects = await render('scaled');
    expect(kindsAndNames(objects)).toEqual(
      [
        ...GATEWAY_OBJECTS,
        'Deployment redis',
        'HorizontalPodAutoscaler chain-gateway',
        'NetworkPolicy redis',
        'Service redis',
      ].sort(),
    );
    const { deployment, podLabels } = checkGateway(objects);
    // The autoscaler owns the count: none in the Deployment, which an apply would reset to.
    expect(deployment.spec.replicas).toBeUndefined();
    const hpa = one(objects, 'HorizontalPodAutoscaler', 'chain-gateway');
    expect(hpa.spec.scaleTargetRef).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name: 'chain-gateway',
    });
    expect([hpa.spec.minReplicas, hpa.spec.maxReplicas]).toEqual([3, 10]);
    expect(hpa.spec.metrics).toEqual([
      {
        type: 'Resource',
        resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } },
      },
    ]);
    expect(deployment.spec.template.spec.topologySpreadConstraints).toEqual([
      {
        maxSkew: 1,
        topologyKey: 'kubernetes.io/hostname',
        whenUnsatisfiable: 'ScheduleAnyway',
        labelSelector: { matchLabels: podLabels },
      },
    ]);
    checkRedis(objects, hpa.spec.maxReplicas);
  });

  it('monitoring: each pod scraped on its metrics port, the alerts, and traces to the collector', async () => {
    const objects = await render('scaled', ['monitoring']);
    const { config, container, podLabels } = checkGateway(objects);
    const monitor = one(objects, 'PodMonitor', 'chain-gateway');
    expect(selects(monitor.spec.selector.matchLabels, podLabels)).toBe(true);
    expect(monitor.spec.podMetricsEndpoints).toEqual([
      { port: 'metrics', path: '/metrics', interval: '15s' },
    ]);
    expect(container.ports.map((p: any) => p.name)).toContain('metrics');
    // The rules, as deploy/monitoring/rules.yaml holds them (test/deploy/monitoring.test.ts checks those).
    const rules = one(objects, 'PrometheusRule', 'chain-gateway');
    expect(rules.spec.groups).toEqual(parse(readFileSync('deploy/monitoring/rules.yaml', 'utf8')).groups);
    checkCollector(objects, config, podLabels);
  });

  it('ingress: /graphql only, to the Service, unbuffered and held for an hour', async () => {
    const objects = await render('single', ['ingress']);
    const ingress = one(objects, 'Ingress', 'chain-gateway');
    const [rule] = ingress.spec.rules;
    expect(rule.http.paths).toEqual([
      {
        path: '/graphql',
        pathType: 'Exact',
        backend: { service: { name: 'chain-gateway', port: { name: 'http' } } },
      },
    ]);
    expect(one(objects, 'Service', 'chain-gateway').spec.ports[0].name).toBe('http');
    expect(ingress.spec.tls).toEqual([{ hosts: [rule.host], secretName: 'chain-gateway-tls' }]);
    expect(ingress.metadata.annotations).toMatchObject({
      'nginx.ingress.kubernetes.io/proxy-buffering': 'off',
      'nginx.ingress.kubernetes.io/proxy-read-timeout': '3600',
      'nginx.ingress.kubernetes.io/proxy-send-timeout': '3600',
    });
  });

  it('streams-autoscaling: the autoscaler also keeps streams per pod at half of MAX_SUBSCRIPTIONS', async () => {
    const objects = await render('scaled', ['streams-autoscaling']);
    const { config } = checkGateway(objects);
    const hpa = one(objects, 'HorizontalPodAutoscaler', 'chain-gateway');
    expect(hpa.spec.metrics).toEqual([
      {
        type: 'Resource',
        resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } },
      },
      {
        type: 'Pods',
        pods: {
          metric: { name: 'graphql_subscriptions_active' },
          target: { type: 'AverageValue', averageValue: String(Number(config.data.MAX_SUBSCRIPTIONS) / 2) },
        },
      },
    ]);
  });

  it("renders docs/deploy.md's overlay: the registry's image by digest, the upstreams, ingress and monitoring", async () => {
    const docs = readFileSync('docs/deploy.md', 'utf8');
    const [, overlay = ''] = /```yaml\n(# my-gateway\/kustomization\.yaml\n[\s\S]*?)```/.exec(docs) ?? [];
    expect(overlay).toContain('../chain-gateway/deploy/k8s/overlays/scaled');
    const objects = await renderKustomization((path) =>
      overlay.replaceAll('../chain-gateway/', `${path('.')}/`),
    );
    for (const object of objects) await expect(validate(object)).resolves.toBeUndefined();
    const { deployment, config, container } = checkGateway(objects);
    expect(container.image).toMatch(/^registry\.example\.com\/chain-gateway@sha256:[0-9a-f]{64}$/);
    expect(deployment.metadata.namespace).toBe('chain-gateway');
    expect(kindsAndNames(objects)).toEqual(
      expect.arrayContaining(['Ingress chain-gateway', 'PodMonitor chain-gateway', 'Deployment redis']),
    );
    // The three upstreams, over HTTPS, and no devnet.
    const urls = ['SCAN_URL', 'EXPLORER_URL', 'STAKE_URL'].map((key) => new URL(config.data[key]).protocol);
    expect(urls).toEqual(['https:', 'https:', 'https:']);
    expect(config.data.DEVNET).toBeUndefined();
    expect(config.data.OTEL_EXPORTER_OTLP_ENDPOINT).toBe('http://otel-collector:4318');
    expect(container.envFrom[1]).toEqual({ secretRef: { name: 'chain-gateway' } });
    expect(one(objects, 'Ingress', 'chain-gateway').spec.rules[0].host).toBe('graphql.example.com');
    // Picked up by kube-prometheus-stack's Prometheus, whose selectors want its release's label.
    expect(one(objects, 'PodMonitor', 'chain-gateway').metadata.labels.release).toBe('kube-prometheus-stack');
    expect(one(objects, 'PrometheusRule', 'chain-gateway').metadata.labels.release).toBe(
      'kube-prometheus-stack',
    );
  });
});

/** The try-out Redis: locked down, sized for its buffers, evicting nothing, reached by gateways only. */
function checkRedis(objects: K8sObject[], maxGatewayPods: number) {
  const gatewayLabels = podLabelsOf(objects, 'chain-gateway');
  const gateway = one(objects, 'Deployment', 'chain-gateway').spec.template.spec.containers[0];
  const redis = one(objects, 'Deployment', 'redis');
  const redisLabels = redis.spec.template.metadata.labels;
  expect(redis.spec.strategy).toEqual({ type: 'Recreate' });
  expect(redis.spec.replicas).toBe(1);
  const [container] = redis.spec.template.spec.containers;
  const args: string[] = container.args;
  const arg = (flag: string) => args[args.indexOf(flag) + 1] as string;
  expect(arg('--maxmemory-policy')).toBe('noeviction');
  expect([arg('--save'), arg('--appendonly'), arg('--notify-keyspace-events')]).toEqual(['', 'no', '']);
  const [kind, hard] = arg('--client-output-buffer-limit').split(' ');
  expect(kind).toBe('pubsub');
  // maxmemory, every gateway pod's subscriber buffer at its hard cap, and 64 MiB for Redis itself.
  const needed = redisBytes(arg('--maxmemory')) + maxGatewayPods * redisBytes(hard as string) + 64 * 2 ** 20;
  expect(bytes(container.resources.limits.memory)).toBeGreaterThanOrEqual(needed);
  expect(container.resources.requests.memory).toBe(container.resources.limits.memory);

  // Users: the default one off, `gateway` with the password and the gateway's keys and channels.
  const users = args.flatMap((flag, i) => {
    if (flag !== '--user') return [];
    const rules = args.slice(i + 1);
    const end = rules.findIndex((rule) => rule.startsWith('--'));
    return [end === -1 ? rules : rules.slice(0, end)];
  });
  expect(users).toEqual([
    ['default', 'off', 'resetpass', '-@all'],
    [
      'gateway',
      'on',
      '>$(REDIS_PASSWORD)',
      '~gw:*',
      '~chain-gateway:*',
      '&gw:*',
      '+@all',
      '-@dangerous',
      '+info',
    ],
  ]);
  // deploy/compose.yaml's Redis, to the password: test/deploy/compose.test.ts runs those settings
  // under a gateway, which must not meet an ACL refusal.
  const composeRedis: string[] = parse(readFileSync('deploy/compose.yaml', 'utf8')).services.redis.command;
  expect(['redis-server', ...args]).toEqual(
    composeRedis.map((a) => a.replace(/^>\$\{REDIS_PASSWORD:\?[^}]*\}$/, '>$(REDIS_PASSWORD)')),
  );
  const password = { valueFrom: { secretKeyRef: { name: 'chain-gateway', key: 'REDIS_PASSWORD' } } };
  expect(container.env).toEqual([{ name: 'REDIS_PASSWORD', ...password }]);
  expect(gateway.env).toEqual(expect.arrayContaining([{ name: 'REDIS_PASSWORD', ...password }]));
  expect(container.readinessProbe.exec.command.join(' ')).toContain(
    'REDISCLI_AUTH="$REDIS_PASSWORD" redis-cli --user gateway ping',
  );
  expect(container.securityContext.readOnlyRootFilesystem).toBe(true);
  expect(redis.spec.template.spec.securityContext.runAsNonRoot).toBe(true);

  // REDIS_URL, made from that password, names the Redis Service, which takes the Redis pod alone.
  const url = gateway.env.find((e: any) => e.name === 'REDIS_URL')?.value;
  const [, host, port] = /^redis:\/\/gateway:\$\(REDIS_PASSWORD\)@([\w-]+):(\d+)$/.exec(url) ?? [];
  const service = one(objects, 'Service', host as string);
  expect(service.spec.ports).toEqual([
    { name: 'redis', port: Number(port), targetPort: 'redis', protocol: 'TCP' },
  ]);
  expect(container.ports).toEqual([{ name: 'redis', containerPort: 6379, protocol: 'TCP' }]);
  expect(service.spec.selector).toEqual(redisLabels);
  expect(selects(service.spec.selector, gatewayLabels)).toBe(false);
  checkRedisFence(objects, redisLabels, gatewayLabels);
}

/** Only gateway pods connect to Redis, and Redis connects to nothing. */
function checkRedisFence(
  objects: K8sObject[],
  redisLabels: Record<string, string>,
  gatewayLabels: Record<string, string>,
) {
  const fence = one(objects, 'NetworkPolicy', 'redis');
  expect(fence.spec.podSelector.matchLabels).toEqual(redisLabels);
  expect(fence.spec.policyTypes).toEqual(['Ingress', 'Egress']);
  expect(fence.spec.egress).toBeUndefined();
  expect(fence.spec.ingress).toEqual([
    { from: [{ podSelector: { matchLabels: gatewayLabels } }], ports: [{ protocol: 'TCP', port: 6379 }] },
  ]);
  const egress = one(objects, 'NetworkPolicy', 'chain-gateway').spec.egress;
  expect(
    egress.some((rule: any) => rule.to && selects(rule.to[0].podSelector.matchLabels, redisLabels)),
  ).toBe(true);
}

/** The collector: OTLP/HTTP on the port the gateways' endpoint names, reached by gateways only. */
function checkCollector(objects: K8sObject[], config: K8sObject, gatewayLabels: Record<string, string>) {
  const endpoint = new URL(config.data.OTEL_EXPORTER_OTLP_ENDPOINT);
  expect(endpoint.protocol).toBe('http:');
  const service = one(objects, 'Service', endpoint.hostname);
  const collector = one(objects, 'Deployment', 'otel-collector');
  const labels = collector.spec.template.metadata.labels;
  expect(service.spec.selector).toEqual(labels);
  expect(service.spec.ports).toEqual([
    { name: 'otlp-http', port: Number(endpoint.port), targetPort: 'otlp-http', protocol: 'TCP' },
  ]);
  const [container] = collector.spec.template.spec.containers;
  const port = container.ports.find((p: any) => p.name === 'otlp-http').containerPort;
  // Its configuration, from the generated ConfigMap the pod mounts, receives on that port.
  const configMap = byPrefix(objects, 'ConfigMap', 'otel-collector');
  expect(collector.spec.template.spec.volumes).toEqual([
    { name: 'config', configMap: { name: configMap.metadata.name } },
  ]);
  const pipeline = parse(configMap.data['config.yaml']);
  expect(pipeline.receivers.otlp.protocols.http.endpoint).toBe(`0.0.0.0:${port}`);
  expect(pipeline.service.pipelines.traces.receivers).toEqual(['otlp']);
  expect(container.args).toEqual(['--config=/etc/otelcol/config.yaml']);
  expect(container.securityContext.readOnlyRootFilesystem).toBe(true);
  const fence = one(objects, 'NetworkPolicy', 'otel-collector');
  expect(fence.spec.podSelector.matchLabels).toEqual(labels);
  expect(fence.spec.ingress).toEqual([
    { from: [{ podSelector: { matchLabels: gatewayLabels } }], ports: [{ protocol: 'TCP', port }] },
  ]);
  const egress = one(objects, 'NetworkPolicy', 'chain-gateway').spec.egress;
  const toCollector = egress.find(
    (rule: any) => rule.to && selects(rule.to[0].podSelector.matchLabels, labels),
  );
  expect(toCollector.ports).toEqual([{ protocol: 'TCP', port }]);
}
