import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
 * OpenAPI; the Prometheus Operator's and the Gateway API's kinds, which it has no model of, by their
 * fields), then against what the gateway needs: the image's own command as its non-root user on a
 * read-only root, probes on /healthz and /readyz, /metrics on a port no Service exposes and only the
 * monitoring namespace reaches, a grace period past the drain, memory for the heap cap and
 * MAX_SUBSCRIPTIONS streams, rollouts and spread that fit streams, egress that never reaches the
 * cloud's metadata address, a Redis only gateways reach and that can evict nothing live, sampled
 * traces to a collector that exports them, a route whose timeouts do not cut streams, and names,
 * selectors and ports that meet. The overlay docs/deploy.md gives an operator is rendered too, its
 * patch naming another monitoring namespace, and its Secret rotation read. kubernetes-models accepts
 * fields it does not know, so each field the gateway relies on is read here by its path: a misspelt
 * one reads as undefined and fails.
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
      // An alerting rule or a recording rule (the SLO's ratios): one name of the two, and an expression.
      for (const rule of group.rules)
        if (isText(rule.alert) === isText(rule.record) || !isText(rule.expr)) fail('spec/groups/rules');
    }
    return;
  }
  fail(`no check for ${object.apiVersion} ${object.kind}`);
}

/** A Gateway API Duration (GEP-2257: `1h`, `30s`, `1m30s`, `500ms`, `0s`) in milliseconds. */
function durationMs(duration: string): number {
  if (!/^([0-9]{1,5}(h|m|s|ms)){1,4}$/.test(duration))
    throw new Error(`not a Gateway API Duration: ${duration}`);
  const unit: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 };
  return [...duration.matchAll(/(\d+)(h|ms|m|s)/g)].reduce(
    (sum, [, n, u]) => sum + Number(n) * (unit[u as string] as number),
    0,
  );
}

/**
 * The Gateway API's HTTPRoute (gateway.networking.k8s.io/v1), by the fields and rules its CRD holds:
 * parents named, each backend a Service port by number, timeouts as Durations whose backendRequest
 * is no longer than a request timeout that is not 0s (its CEL rule).
 */
function validateGatewayApiKind(object: K8sObject): void {
  const fail = (what: string) => {
    throw new Error(`${object.kind} ${object.metadata.name}: ${what}`);
  };
  if (object.kind !== 'HTTPRoute') fail(`no check for ${object.apiVersion} ${object.kind}`);
  const { parentRefs, rules, hostnames = [] } = object.spec ?? {};
  if (!Array.isArray(parentRefs) || parentRefs.length === 0) fail('spec/parentRefs');
  for (const ref of parentRefs)
    if (typeof ref.name !== 'string' || ref.name === '') fail('spec/parentRefs/name');
  for (const host of hostnames)
    if (!/^(\*\.)?[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(host)) fail('spec/hostnames');
  if (!Array.isArray(rules) || rules.length === 0) fail('spec/rules');
  for (const rule of rules) {
    for (const ref of rule.backendRefs ?? [])
      if (typeof ref.name !== 'string' || !Number.isInteger(ref.port)) fail('spec/rules/backendRefs/port');
    const { request, backendRequest } = rule.timeouts ?? {};
    const [total, backend] = [request, backendRequest].map((d) =>
      d === undefined ? undefined : durationMs(d),
    );
    if (total !== undefined && total !== 0 && backend !== undefined && backend > total)
      fail('spec/rules/timeouts: backendRequest timeout cannot be longer than request timeout');
  }
}

/** Checks one object against its kind's schema; throws with every violation. */
async function validate(object: K8sObject): Promise<void> {
  if (object.apiVersion === 'monitoring.coreos.com/v1') return validateOperatorKind(object);
  if (object.apiVersion === 'gateway.networking.k8s.io/v1') return validateGatewayApiKind(object);
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
  checkRollout(deployment, config, podLabels);
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
  checkGatewayIngress(objects, container);
  return { deployment, config, container, podLabels };
}

/**
 * The most streams any old pod holds during a rollout of `pods` pods holding `each` streams, `surge`
 * pods at a time: each step starts `surge` new pods, then stops as many old ones, whose streams
 * reconnect evenly over every pod left (the Service spreads them; their retry is spread over 10 s).
 */
function rolloutPeak(pods: number, each: number, surge: number): number {
  let old: number[] = Array(pods).fill(each);
  let fresh: number[] = [];
  let peak = 0;
  while (old.length > 0) {
    const stopped = old.slice(0, surge);
    old = old.slice(surge);
    fresh = [...fresh, ...stopped.map(() => 0)];
    const share = stopped.reduce((a, b) => a + b, 0) / (old.length + fresh.length);
    old = old.map((n) => n + share);
    fresh = fresh.map((n) => n + share);
    peak = Math.max(peak, ...old);
  }
  return peak;
}

/** A Deployment's maxSurge for this many pods, as the controller rounds it (up). */
const surgeOf = (maxSurge: number | string, pods: number) =>
  typeof maxSurge === 'number' ? maxSurge : Math.ceil((pods * Number.parseInt(maxSurge, 10)) / 100);

/**
 * Rollouts that fit streams: never below the count, and enough pods anew at a time that, with every
 * pod at the streams autoscaler's target (half of MAX_SUBSCRIPTIONS), the streams of the pods that
 * go never push an old pod past MAX_SUBSCRIPTIONS, at any count the autoscaler may run. Pods spread
 * over zones, then nodes, each rollout's pods among themselves (pod-template-hash).
 */
function checkRollout(deployment: K8sObject, config: K8sObject, podLabels: Record<string, string>) {
  const { rollingUpdate } = deployment.spec.strategy;
  expect(deployment.spec.strategy).toEqual({
    type: 'RollingUpdate',
    rollingUpdate: { maxSurge: '50%', maxUnavailable: 0 },
  });
  const max = Number(config.data.MAX_SUBSCRIPTIONS);
  for (let pods = 1; pods <= 10; pods++)
    expect(rolloutPeak(pods, max / 2, surgeOf(rollingUpdate.maxSurge, pods)), `${pods} pods`).toBeLessThan(
      max,
    );
  // The model holds what docs/deploy.md tells: one pod at a time, or a quarter, goes past the cap.
  expect(Math.round(rolloutPeak(10, max / 2, 1))).toBe(11_790);
  expect(Math.round(rolloutPeak(10, max / 2, surgeOf('25%', 10)))).toBe(10_985);
  const spread = (topologyKey: string) => ({
    maxSkew: 1,
    topologyKey,
    whenUnsatisfiable: 'ScheduleAnyway',
    labelSelector: { matchLabels: podLabels },
    matchLabelKeys: ['pod-template-hash'],
  });
  expect(deployment.spec.template.spec.topologySpreadConstraints).toEqual([
    spread('topology.kubernetes.io/zone'),
    spread('kubernetes.io/hostname'),
  ]);
}

/** Kubernetes' own label of every namespace, to its name: the monitoring namespace's by default. */
const MONITORING_NAMESPACE = { 'kubernetes.io/metadata.name': 'monitoring' };

/**
 * Who reaches the gateway pods: anyone the serving port, and the metrics port only pods of the
 * monitoring namespace (contract.md §9; docs/deploy.md says how an overlay names its own).
 */
function checkGatewayIngress(objects: K8sObject[], container: any) {
  const policy = one(objects, 'NetworkPolicy', 'chain-gateway');
  expect(policy.spec.ingress).toEqual([
    { ports: [{ protocol: 'TCP', port: 'http' }] },
    {
      from: [{ namespaceSelector: { matchLabels: MONITORING_NAMESPACE } }],
      ports: [{ protocol: 'TCP', port: 'metrics' }],
    },
  ]);
  // The rules name the container's ports, so every port of the pod is admitted by one of them.
  const named = policy.spec.ingress.flatMap((rule: any) => rule.ports.map((p: any) => p.port));
  expect(container.ports.map((p: any) => p.name)).toEqual(named);
}

/** The cloud's metadata service: the address every cloud answers on, and AWS' IPv6 one. */
const METADATA = { v4: '169.254.169.254/32', v6: 'fd00:ec2::254/128' };

/** A NetworkPolicy peer in a few words: `pods:<component>`, `any pod`, or a CIDR `except` its holes. */
function peerName(peer: any): string {
  if (peer.ipBlock) return [peer.ipBlock.cidr, ...(peer.ipBlock.except ?? [])].join(' except ');
  if (peer.podSelector) return `pods:${peer.podSelector.matchLabels['app.kubernetes.io/component']}`;
  if (peer.namespaceSelector && Object.keys(peer.namespaceSelector).length === 0) return 'any pod';
  throw new Error(`unexpected peer ${JSON.stringify(peer)}`);
}

/**
 * No egress rule of any NetworkPolicy reaches the metadata address: each names its peers (a rule
 * without `to` is every address), and each block of all IPv4 or IPv6 addresses leaves it out.
 */
function checkMetadataFenced(objects: K8sObject[]) {
  for (const policy of objects.filter((o) => o.kind === 'NetworkPolicy')) {
    for (const rule of policy.spec.egress ?? []) {
      expect(rule.to, `${policy.metadata.name}: an egress rule to anywhere`).toEqual(expect.any(Array));
      for (const { ipBlock } of rule.to.filter((peer: any) => peer.ipBlock)) {
        const hole = { '0.0.0.0/0': METADATA.v4, '::/0': METADATA.v6 }[ipBlock.cidr as string];
        if (hole) expect(ipBlock.except, `${policy.metadata.name}: ${ipBlock.cidr}`).toContain(hole);
        // A narrower block is yours to name, but never one that holds the metadata address.
        else expect(ipBlock.cidr.startsWith('169.254.') || ipBlock.cidr.startsWith('fd00:ec2:')).toBe(false);
      }
    }
  }
}

/** The gateway pods reach DNS, the upstreams' ports, Redis pods and collector pods, and nothing else. */
function checkGatewayEgress(objects: K8sObject[], podLabels: Record<string, string>) {
  const egress = one(objects, 'NetworkPolicy', 'chain-gateway');
  expect(egress.spec.podSelector.matchLabels).toEqual(podLabels);
  expect(egress.spec.policyTypes).toEqual(['Ingress', 'Egress']);
  const rules = egress.spec.egress.map((rule: any) => ({
    to: rule.to.map(peerName),
    ports: rule.ports.map((p: any) => `${p.protocol}/${p.port}`),
  }));
  const outside = [`0.0.0.0/0 except ${METADATA.v4}`, `::/0 except ${METADATA.v6}`];
  expect(rules).toEqual([
    { to: ['any pod', ...outside], ports: ['UDP/53', 'TCP/53'] },
    { to: outside, ports: ['TCP/443', 'TCP/80'] },
    { to: ['pods:redis'], ports: ['TCP/6379'] },
    { to: ['pods:otel-collector'], ports: ['TCP/4318'] },
  ]);
  for (const rule of egress.spec.egress.slice(2))
    expect(rule.to[0].podSelector.matchLabels['app.kubernetes.io/name']).toBe('chain-gateway');
  checkMetadataFenced(objects);
}

/** Every overlay, alone and with the components that fit it. */
const RENDERS: { overlay: string; components: string[] }[] = [
  { overlay: 'devnet', components: [] },
  { overlay: 'devnet', components: ['monitoring'] },
  { overlay: 'devnet', components: ['tracing'] },
  { overlay: 'devnet', components: ['ingress'] },
  { overlay: 'devnet', components: ['gateway-api'] },
  { overlay: 'single', components: [] },
  { overlay: 'single', components: ['monitoring'] },
  { overlay: 'single', components: ['tracing'] },
  { overlay: 'single', components: ['ingress'] },
  { overlay: 'single', components: ['gateway-api'] },
  { overlay: 'single', components: ['ingress', 'monitoring'] },
  { overlay: 'single', components: ['gateway-api', 'monitoring', 'tracing'] },
  { overlay: 'scaled', components: [] },
  { overlay: 'scaled', components: ['monitoring'] },
  { overlay: 'scaled', components: ['tracing'] },
  { overlay: 'scaled', components: ['ingress'] },
  { overlay: 'scaled', components: ['gateway-api'] },
  { overlay: 'scaled', components: ['streams-autoscaling'] },
  { overlay: 'scaled', components: ['ingress', 'monitoring', 'tracing', 'streams-autoscaling'] },
  { overlay: 'scaled', components: ['gateway-api', 'monitoring', 'tracing', 'streams-autoscaling'] },
];

/** The components an overlay adds (autoscaling and redis come with the scaled overlay). */
const IN_OVERLAYS = ['autoscaling', 'redis'];

describe.skipIf(!kubectl)('deploy/k8s', () => {
  for (const { overlay, components } of RENDERS) {
    it(`renders the ${overlay} overlay with components ${JSON.stringify(components)} into objects valid against their schemas`, async () => {
      const objects = await render(overlay, components);
      expect(kindsAndNames(objects)).toEqual(expect.arrayContaining(GATEWAY_OBJECTS));
      for (const object of objects) await expect(validate(object)).resolves.toBeUndefined();
      checkGateway(objects);
    });
  }

  it('renders every component of deploy/k8s/components, with every overlay', () => {
    const components = readdirSync('deploy/k8s/components').sort();
    const rendered = new Set([...IN_OVERLAYS, ...RENDERS.flatMap((r) => r.components)]);
    expect(components.filter((c) => !rendered.has(c))).toEqual([]);
    expect(readdirSync('deploy/k8s/overlays').sort()).toEqual(
      [...new Set(RENDERS.map((r) => r.overlay))].sort(),
    );
  });

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
    const route = structuredClone(one(await render('single', ['gateway-api']), 'HTTPRoute', 'chain-gateway'));
    route.spec.rules[0].timeouts = { request: '30s', backendRequest: '1m' };
    await expect(validate(route)).rejects.toThrow(/backendRequest timeout cannot be longer/);
    route.spec.rules[0].timeouts = { request: 'forever' };
    await expect(validate(route)).rejects.toThrow(/not a Gateway API Duration/);
    route.spec.rules[0].timeouts = { request: '0s' };
    route.spec.rules[0].backendRefs[0].port = 'http';
    await expect(validate(route)).rejects.toThrow(/backendRefs\/port/);
    // The metadata fence: a rule to anywhere, or all of IPv4 with no hole, is refused.
    const fence = structuredClone(one(objects, 'NetworkPolicy', 'chain-gateway'));
    fence.spec.egress.push({ ports: [{ protocol: 'TCP', port: 8443 }] });
    expect(() => checkMetadataFenced([fence])).toThrow(/an egress rule to anywhere/);
    fence.spec.egress[fence.spec.egress.length - 1].to = [{ ipBlock: { cidr: '0.0.0.0/0' } }];
    expect(() => checkMetadataFenced([fence])).toThrow(/0\.0\.0\.0\/0/);
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

  it('scaled: 3 to 10 gateway pods by CPU, spread over zones and nodes, sharing the Redis beside them', async () => {
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
    const { deployment } = checkGateway(objects);
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
    checkRedis(objects, hpa.spec.maxReplicas);
  });

  it('monitoring: each pod scraped on its metrics port, and the alerts; no traces (the tracing component)', async () => {
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
    expect(config.data.OTEL_EXPORTER_OTLP_ENDPOINT).toBeUndefined();
    expect(objects.filter((o) => o.metadata.name.startsWith('otel-collector'))).toEqual([]);
  });

  it('tracing: 5 % of the traces that start here, to a collector that exports them to your backend', async () => {
    const objects = await render('scaled', ['tracing']);
    const { config, podLabels } = checkGateway(objects);
    // Parent-based: a caller's decision is followed; the ratio is for the traces that start here.
    expect(config.data.OTEL_TRACES_SAMPLER).toBe('parentbased_traceidratio');
    expect(Number(config.data.OTEL_TRACES_SAMPLER_ARG)).toBe(0.05);
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

  it('gateway-api: /graphql only, to the Service, from the Gateway you name, with no deadline for streams', async () => {
    const objects = await render('scaled', ['gateway-api']);
    const route = one(objects, 'HTTPRoute', 'chain-gateway');
    expect(route.apiVersion).toBe('gateway.networking.k8s.io/v1');
    expect(route.spec.parentRefs).toEqual([
      { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'public', namespace: 'gateway-system' },
    ]);
    expect(route.spec.hostnames).toEqual(['chain-gateway.example']);
    expect(route.spec.rules).toHaveLength(1);
    const [rule] = route.spec.rules;
    expect(rule.matches).toEqual([{ path: { type: 'Exact', value: '/graphql' } }]);
    // The Service's serving port, by number (the Gateway API has no named ports).
    const [port] = one(objects, 'Service', 'chain-gateway').spec.ports;
    expect(port.name).toBe('http');
    expect(rule.backendRefs).toEqual([
      { group: '', kind: 'Service', name: 'chain-gateway', port: port.port },
    ]);
    // No timeout cuts a stream: 0s (none) or at least an hour, for the request and each backend call.
    const { request, backendRequest } = rule.timeouts;
    for (const timeout of [request, backendRequest]) {
      const ms = durationMs(timeout);
      expect(ms === 0 || ms >= 3_600_000, `timeout ${timeout}`).toBe(true);
    }
    expect([request, backendRequest]).toEqual(['0s', '0s']);
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

  it("names another monitoring namespace as docs/deploy.md's patch does: the metrics port admits that one alone", async () => {
    const docs = readFileSync('docs/deploy.md', 'utf8');
    // The first YAML block after the sentence, indented as the list item it belongs to.
    const [, indent = '', block = ''] =
      /\n( *)```yaml\n((?:\1.*\n)*?)\1```/.exec(
        docs.slice(docs.indexOf('If your Prometheus runs in another namespace')),
      ) ?? [];
    const { patches } = parse(block.replace(new RegExp(`^${indent}`, 'gm'), ''));
    expect(patches[0].target).toEqual({ kind: 'NetworkPolicy', name: 'chain-gateway' });
    const objects = await renderKustomization((path) =>
      stringify({
        apiVersion: 'kustomize.config.k8s.io/v1beta1',
        kind: 'Kustomization',
        resources: [path('deploy/k8s/overlays/single')],
        patches,
      }),
    );
    const policy = one(objects, 'NetworkPolicy', 'chain-gateway');
    await expect(validate(policy)).resolves.toBeUndefined();
    expect(policy.spec.ingress).toEqual([
      { ports: [{ protocol: 'TCP', port: 'http' }] },
      {
        from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'observability' } } }],
        ports: [{ protocol: 'TCP', port: 'metrics' }],
      },
    ]);
  });

  it("renders docs/deploy.md's overlay: the registry's image by digest, the upstreams, route, monitoring and traces", async () => {
    const docs = readFileSync('docs/deploy.md', 'utf8');
    const [, overlay = ''] = /```yaml\n(# my-gateway\/kustomization\.yaml\n[\s\S]*?)```/.exec(docs) ?? [];
    expect(overlay).toContain('../chain-gateway/deploy/k8s/overlays/scaled');
    const objects = await renderKustomization((path) =>
      overlay.replaceAll('../chain-gateway/', `${path('.')}/`),
    );
    for (const object of objects) await expect(validate(object)).resolves.toBeUndefined();
    const { deployment, config, container, podLabels } = checkGateway(objects);
    expect(container.image).toMatch(/^registry\.example\.com\/chain-gateway@sha256:[0-9a-f]{64}$/);
    expect(deployment.metadata.namespace).toBe('chain-gateway');
    expect(kindsAndNames(objects)).toEqual(
      expect.arrayContaining([
        'HTTPRoute chain-gateway',
        'PodMonitor chain-gateway',
        'Deployment redis',
        'Deployment otel-collector',
      ]),
    );
    expect(objects.filter((o) => o.kind === 'Ingress')).toEqual([]);
    // The three upstreams, over HTTPS, and no devnet.
    const urls = ['SCAN_URL', 'EXPLORER_URL', 'STAKE_URL'].map((key) => new URL(config.data[key]).protocol);
    expect(urls).toEqual(['https:', 'https:', 'https:']);
    expect(config.data.DEVNET).toBeUndefined();
    expect(config.data.OTEL_EXPORTER_OTLP_ENDPOINT).toBe('http://otel-collector:4318');
    expect(config.data.OTEL_TRACES_SAMPLER).toBe('parentbased_traceidratio');
    checkCollector(objects, config, podLabels);
    expect(byPrefix(objects, 'ConfigMap', 'otel-collector').data.TRACE_BACKEND_ENDPOINT).toBe(
      'http://tempo-distributor.observability:4318',
    );
    expect(container.envFrom[1]).toEqual({ secretRef: { name: 'chain-gateway' } });
    // The Gateway the operator names, the host, and the route's own timeouts kept.
    const route = one(objects, 'HTTPRoute', 'chain-gateway');
    expect(route.spec.parentRefs).toEqual([
      { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'external', namespace: 'gateway-infra' },
    ]);
    expect(route.spec.hostnames).toEqual(['graphql.example.com']);
    expect(route.spec.rules[0].timeouts).toEqual({ request: '0s', backendRequest: '0s' });
    // Picked up by kube-prometheus-stack's Prometheus, whose selectors want its release's label.
    expect(one(objects, 'PodMonitor', 'chain-gateway').metadata.labels.release).toBe('kube-prometheus-stack');
    expect(one(objects, 'PrometheusRule', 'chain-gateway').metadata.labels.release).toBe(
      'kube-prometheus-stack',
    );
  });
});

/** The shell blocks of one section of docs/deploy.md (from its heading to the next of its level). */
function docSection(heading: string): string {
  const docs = readFileSync('docs/deploy.md', 'utf8');
  const start = docs.indexOf(`\n${heading}\n`);
  expect(start, heading).toBeGreaterThan(-1);
  const level = (heading.split(' ')[0] as string).length;
  const rest = docs.slice(start + heading.length + 2);
  const end = new RegExp(`\\n#{1,${level}} `).exec(rest)?.index;
  const section = rest.slice(0, end);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]).join('\n');
}

/**
 * Each `kubectl patch secret` of the commands, with its type and its payload parsed: a merge patch's
 * `printf` format filled with hex (what `openssl rand -hex` and the Secret's own values give).
 */
function secretPatches(commands: string) {
  const joined = commands.replace(/\s*\\\n\s*/g, ' ');
  return [
    ...joined.matchAll(/kubectl -n chain-gateway patch secret chain-gateway --type (\w+) -p (.*)/g),
  ].map(([, type, arg = '']) => {
    const printf = /^"\$\(printf '([^']*)'/.exec(arg);
    const literal = /^'([^']*)'/.exec(arg);
    const payload = printf ? (printf[1] as string).replaceAll('%s', 'ab'.repeat(32)) : literal?.[1];
    return { type, payload: JSON.parse(payload as string) };
  });
}

describe('docs/deploy.md, Rotating CURSOR_SECRET', () => {
  it('patches the keys it changes and leaves the rest of the Secret (REDIS_PASSWORD) as it is', () => {
    const commands = docSection('### Rotating CURSOR_SECRET');
    // No Secret made again from literals, where a key left out (or an empty variable) is lost.
    expect(commands).not.toMatch(/create secret|--from-literal|kubectl[^\n]* apply/);
    expect(secretPatches(commands)).toEqual([
      // Step 1: the new secret, the old one as previous.
      {
        type: 'merge',
        payload: { stringData: { CURSOR_SECRET: 'ab'.repeat(32), CURSOR_SECRET_PREVIOUS: 'ab'.repeat(32) } },
      },
      // Step 2: the previous one dropped, by its key alone.
      { type: 'json', payload: [{ op: 'remove', path: '/data/CURSOR_SECRET_PREVIOUS' }] },
      // A new Redis password, by its key alone.
      { type: 'merge', payload: { stringData: { REDIS_PASSWORD: 'ab'.repeat(32) } } },
    ]);
    // The old secret is read before it is replaced, and each patch is followed by a restart.
    expect(commands.indexOf("jsonpath='{.data.CURSOR_SECRET}'")).toBeLessThan(
      commands.indexOf('patch secret'),
    );
    expect(commands.match(/rollout restart deployment\/(redis )?(deployment\/)?chain-gateway/g)).toHaveLength(
      3,
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
  expect(egress.some((rule: any) => reachesPods(rule, redisLabels))).toBe(true);
}

/** Whether an egress rule names pods with these labels. */
const reachesPods = (rule: any, labels: Record<string, string>) =>
  rule.to.some((peer: any) => peer.podSelector && selects(peer.podSelector.matchLabels, labels));

/** The collector's image: the contrib distribution, one exact release of 2026 (0.143.0 was its first). */
const COLLECTOR_IMAGE = /^docker\.io\/otel\/opentelemetry-collector-contrib:0\.(\d+)\.\d+$/;

/**
 * The collector: OTLP/HTTP on the port the gateways' endpoint names, reached by gateways only; a
 * current release, its memory bounded, exporting over OTLP to the backend the operator names.
 */
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
  expect(Number(COLLECTOR_IMAGE.exec(container.image)?.[1])).toBeGreaterThanOrEqual(143);
  // The compose file runs the same release.
  const compose = parse(readFileSync('deploy/compose.yaml', 'utf8'));
  expect(compose.services['otel-collector'].image).toBe(container.image);
  const port = container.ports.find((p: any) => p.name === 'otlp-http').containerPort;
  // Its configuration, from the generated ConfigMap the pod mounts, receives on that port.
  const configMap = byPrefix(objects, 'ConfigMap', 'otel-collector');
  expect(collector.spec.template.spec.volumes).toEqual([
    {
      name: 'config',
      configMap: { name: configMap.metadata.name, items: [{ key: 'config.yaml', path: 'config.yaml' }] },
    },
  ]);
  const pipeline = parse(configMap.data['config.yaml']);
  expect(pipeline.receivers.otlp.protocols.http.endpoint).toBe(`0.0.0.0:${port}`);
  const traces = pipeline.service.pipelines.traces;
  expect(traces.receivers).toEqual(['otlp']);
  // Memory first (refusing before the container outgrows its limit), then batches.
  expect(traces.processors).toEqual(['memory_limiter', 'batch']);
  expect(pipeline.processors.memory_limiter.limit_percentage).toBe(80);
  // Spans go somewhere: OTLP to the backend the ConfigMap's key names, never only `debug`'s log.
  expect(traces.exporters).toEqual(['otlp_http']);
  // The collector's own expansion of an environment variable (not a template string's).
  expect(pipeline.exporters.otlp_http.endpoint).toBe(['$', '{env:TRACE_BACKEND_ENDPOINT}'].join(''));
  expect(container.env).toEqual(
    expect.arrayContaining([
      {
        name: 'TRACE_BACKEND_ENDPOINT',
        valueFrom: { configMapKeyRef: { name: configMap.metadata.name, key: 'TRACE_BACKEND_ENDPOINT' } },
      },
    ]),
  );
  expect(new URL(configMap.data.TRACE_BACKEND_ENDPOINT).protocol).toMatch(/^https?:$/);
  const health = container.ports.find((p: any) => p.name === 'health').containerPort;
  expect(pipeline.extensions.health_check.endpoint).toBe(`0.0.0.0:${health}`);
  expect(container.readinessProbe.httpGet.port).toBe('health');
  expect(container.args).toEqual(['--config=/etc/otelcol/config.yaml']);
  expect(container.securityContext.readOnlyRootFilesystem).toBe(true);
  const fence = one(objects, 'NetworkPolicy', 'otel-collector');
  expect(fence.spec.podSelector.matchLabels).toEqual(labels);
  expect(fence.spec.policyTypes).toEqual(['Ingress', 'Egress']);
  expect(fence.spec.ingress).toEqual([
    { from: [{ podSelector: { matchLabels: gatewayLabels } }], ports: [{ protocol: 'TCP', port }] },
  ]);
  // Out: DNS and the backend, in the cluster or outside it, on any port, but not the metadata address.
  expect(fence.spec.egress.map((rule: any) => ({ to: rule.to.map(peerName), ports: rule.ports }))).toEqual([
    {
      to: ['any pod', `0.0.0.0/0 except ${METADATA.v4}`, `::/0 except ${METADATA.v6}`],
      ports: undefined,
    },
  ]);
  const egress = one(objects, 'NetworkPolicy', 'chain-gateway').spec.egress;
  const toCollector = egress.find((rule: any) => reachesPods(rule, labels));
  expect(toCollector.ports).toEqual([{ protocol: 'TCP', port }]);
}
