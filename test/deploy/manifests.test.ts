import { readFileSync } from 'node:fs';
import * as apps from 'kubernetes-models/apps/v1';
import * as autoscaling from 'kubernetes-models/autoscaling/v2';
import * as policy from 'kubernetes-models/policy/v1';
import * as core from 'kubernetes-models/v1';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { installed } from '../support/binaries.js';
import { run } from './podman.js';

/**
 * deploy/k8s: every overlay rendered by `kubectl kustomize`, each object checked against the
 * Kubernetes API's schemas (kubernetes-models, Kubernetes 1.27's OpenAPI), then against what the
 * gateway needs: the image's own command as its non-root user on a read-only root, probes on
 * /healthz and /readyz, a grace period past the shutdown delay and the drain deadline, a memory
 * limit that holds the heap cap and MAX_SUBSCRIPTIONS streams, and names and selectors that meet.
 * kubernetes-models accepts fields it does not know, so each field the gateway relies on is read
 * here by its path: a misspelt one reads as undefined and fails.
 */

const kubectl = installed(
  '/usr/bin/kubectl',
  'kubectl',
  'the Google Cloud CLI (package kubectl); kustomize v4 or later, so not Debian’s kubernetes-client 1.20',
);

type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: any };
  [key: string]: any;
};

async function render(overlay: string): Promise<K8sObject[]> {
  const rendered = await run('kubectl', ['kustomize', `deploy/k8s/overlays/${overlay}`]);
  if (rendered.code !== 0) throw new Error(`kubectl kustomize ${overlay} failed: ${rendered.stderr}`);
  return parseAllDocuments(rendered.stdout).map((doc) => doc.toJS() as K8sObject);
}

/** The API groups the manifests use: an object of any other is refused. */
const MODELS: Record<string, Record<string, any>> = {
  v1: core,
  'apps/v1': apps,
  'autoscaling/v2': autoscaling,
  'policy/v1': policy,
};

/** Checks one object against its kind's schema; throws with every violation. */
async function validate(object: K8sObject): Promise<void> {
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
const secretValue = (secret: K8sObject, key: string) =>
  Buffer.from(secret.data[key] ?? '', 'base64').toString();

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

/** What both overlays share: the gateway's Deployment, Service, ConfigMap, Secret and PDB. */
function checkGateway(objects: K8sObject[]) {
  const deployment = one(objects, 'Deployment', 'chain-gateway');
  const config = byPrefix(objects, 'ConfigMap', 'chain-gateway');
  const secret = byPrefix(objects, 'Secret', 'chain-gateway');
  const pod = deployment.spec.template.spec;
  const podLabels = deployment.spec.template.metadata.labels;
  expect(deployment.spec.selector.matchLabels).toEqual(podLabels);
  expect(deployment.spec.strategy.rollingUpdate).toEqual({ maxSurge: 1, maxUnavailable: 0 });
  expect(pod.containers).toHaveLength(1);
  const [container] = pod.containers;

  // The image's own command (`npm start`'s), as its own non-root user, on a read-only root.
  expect(container.image).toBe('chain-gateway:0.1.0');
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

  // Settings and secrets from the generated objects, under their hashed names.
  expect(container.envFrom).toEqual([
    { configMapRef: { name: config.metadata.name } },
    { secretRef: { name: secret.metadata.name } },
  ]);
  expect(Object.keys(secret.data).sort()).toEqual(['CURSOR_SECRET', 'EXPLORER_TOKEN', 'REDIS_URL']);
  expect(secretValue(secret, 'CURSOR_SECRET')).toBe('');
  expect(config.data.WORKERS).toBe('1');

  // Probes on the named port, which is the port the gateway listens on.
  expect(container.ports).toEqual([
    { name: 'http', containerPort: Number(config.data.PORT), protocol: 'TCP' },
  ]);
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
  expect(heap).toBe(536 * 2 ** 20);
  expect(limit).toBeGreaterThan(heap + IDLE_BYTES);
  expect(limit).toBeGreaterThan(IDLE_BYTES + Number(config.data.MAX_SUBSCRIPTIONS) * STREAM_BYTES);
  expect(bytes(container.resources.requests.memory)).toBeLessThanOrEqual(limit);
  expect(container.resources.requests.cpu).toBe('500m');

  // The Service and the disruption budget select exactly these pods.
  const service = one(objects, 'Service', 'chain-gateway');
  expect(service.spec.selector).toEqual(podLabels);
  expect(service.spec.ports).toEqual([{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }]);
  const pdb = one(objects, 'PodDisruptionBudget', 'chain-gateway');
  expect(pdb.spec).toEqual({ maxUnavailable: 1, selector: { matchLabels: podLabels } });
  return { deployment, secret, podLabels };
}

describe.skipIf(!kubectl)('deploy/k8s', () => {
  it.each(['single', 'scaled'])(
    'renders the %s overlay into objects valid against the Kubernetes schemas',
    async (overlay) => {
      const objects = await render(overlay);
      expect(objects.length).toBeGreaterThan(0);
      for (const object of objects) await expect(validate(object)).resolves.toBeUndefined();
    },
  );

  it('rejects an object that breaks its schema (the check is not a no-op)', async () => {
    const [deployment] = (await render('single')).filter((o) => o.kind === 'Deployment');
    const broken = structuredClone(deployment as K8sObject);
    broken.spec.template.spec.containers[0].resources.limits.memory = 'lots';
    await expect(validate(broken)).rejects.toThrow(/resources\/limits\/memory/);
  });

  it('single: one gateway pod, no Redis, no autoscaler', async () => {
    const objects = await render('single');
    expect(kindsAndNames(objects)).toEqual([
      'ConfigMap chain-gateway-<hash>',
      'Deployment chain-gateway',
      'PodDisruptionBudget chain-gateway',
      'Secret chain-gateway-<hash>',
      'Service chain-gateway',
    ]);
    const { deployment, secret } = checkGateway(objects);
    expect(deployment.spec.replicas).toBe(1);
    expect(secretValue(secret, 'REDIS_URL')).toBe('');
  });

  it('scaled: 3 to 10 gateway pods by CPU, spread over nodes, sharing the Redis beside them', async () => {
    const objects = await render('scaled');
    expect(kindsAndNames(objects)).toEqual([
      'ConfigMap chain-gateway-<hash>',
      'Deployment chain-gateway',
      'Deployment redis',
      'HorizontalPodAutoscaler chain-gateway',
      'PodDisruptionBudget chain-gateway',
      'Secret chain-gateway-<hash>',
      'Service chain-gateway',
      'Service redis',
    ]);
    const { deployment, secret, podLabels } = checkGateway(objects);
    // The autoscaler owns the count: none in the Deployment, which an apply would reset to.
    expect(deployment.spec.replicas).toBeUndefined();
    const hpa = one(objects, 'HorizontalPodAutoscaler', 'chain-gateway');
    expect(hpa.spec.scaleTargetRef).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name: 'chain-gateway',
    });
    expect([hpa.spec.minReplicas, hpa.spec.maxReplicas]).toEqual([3, 10]);
    expect(deployment.spec.template.spec.topologySpreadConstraints).toEqual([
      {
        maxSkew: 1,
        topologyKey: 'kubernetes.io/hostname',
        whenUnsatisfiable: 'ScheduleAnyway',
        labelSelector: { matchLabels: podLabels },
      },
    ]);

    // REDIS_URL names the Redis Service, whose selector takes the Redis pod and no gateway pod.
    const redisUrl = new URL(secretValue(secret, 'REDIS_URL'));
    const redisService = one(objects, 'Service', redisUrl.hostname);
    expect(redisService.spec.ports).toEqual([
      { name: 'redis', port: Number(redisUrl.port), targetPort: 'redis', protocol: 'TCP' },
    ]);
    const redis = one(objects, 'Deployment', 'redis');
    expect(redisService.spec.selector).toEqual(redis.spec.template.metadata.labels);
    expect(redisService.spec.selector).not.toEqual(podLabels);
    const [redisContainer] = redis.spec.template.spec.containers;
    expect(redisContainer.ports).toEqual([{ name: 'redis', containerPort: 6379, protocol: 'TCP' }]);
    expect(redisContainer.args).toEqual(expect.arrayContaining(['--maxmemory-policy', 'allkeys-lru']));
    expect(redisContainer.securityContext.readOnlyRootFilesystem).toBe(true);
    expect(redis.spec.template.spec.securityContext.runAsNonRoot).toBe(true);
  });
});
