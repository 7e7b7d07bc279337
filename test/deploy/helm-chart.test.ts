import { mkdtempSync, writeFileSync, mkdirSync, cpSync, readFileSync, rmSync } from 'node:fs';
import { envName, RUN_OPTIONS } from '../../src/config/options.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadWorkerConfig } from '../../src/config/load.js';
import { CHART_DIR, REPO_ROOT, run, STANDALONE_VALUES, toolGate } from './tools.js';
import { block, envNames, listItem, listValues, onlyDoc, splitManifests, type ManifestDoc } from './manifests.js';

const helm = toolGate('helm', 'bash .ci/deploy-tools.sh builds it with `go install helm.sh/helm/v3/cmd/helm@v3.16.4`');
const promtool = toolGate('promtool', 'apt-get install prometheus');
const SIDECAR_VALUES = join(CHART_DIR, 'examples', 'sidecar-values.yaml');
const scratch = mkdtempSync(join(tmpdir(), 'dw-helm-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function helmRun(args: string[]) {
  return run(helm.path!, args);
}

/** `helm template` that must succeed; returns the parsed documents. */
function render(args: string[] = [], release = 'rel'): ManifestDoc[] {
  const result = helmRun(['template', release, CHART_DIR, '--namespace', 'jobs', '-f', STANDALONE_VALUES, ...args]);
  if (result.code !== 0) throw new Error(`helm template failed (${result.code}): ${result.stderr}`);
  return splitManifests(result.stdout);
}

/** `helm template` that must fail; returns stderr. */
function renderFailure(args: string[]): string {
  const result = helmRun(['template', 'rel', CHART_DIR, '-f', STANDALONE_VALUES, ...args]);
  expect(result.code, `expected helm template ${args.join(' ')} to fail`).not.toBe(0);
  return result.stderr;
}

function workerContainer(docs: ManifestDoc[]): string {
  const container = listItem(onlyDoc(docs, 'Deployment').text, 'name', 'durable-worker');
  if (!container) throw new Error('no durable-worker container');
  return container;
}

function envVar(container: string, name: string): string {
  const item = listItem(container, 'name', name);
  if (!item) throw new Error(`no env ${name} in\n${container}`);
  return item;
}

function args(container: string): string[] {
  return listValues(block(container, 'args')!);
}

function graceSeconds(docs: ManifestDoc[]): number {
  return Number(/^\s+terminationGracePeriodSeconds: (\d+)$/m.exec(onlyDoc(docs, 'Deployment').text)?.[1]);
}

/** The `run` options of docs/configuration.md as env names (DURABLE_WORKER_<UPPER_SNAKE>). */
/** The env var of every `run` option (src/config/options.ts, the table the CLI and the config loader share). */
function contractEnvNames(): Set<string> {
  return new Set(RUN_OPTIONS.map((option) => envName(option.key)));
}

/**
 * What the container's process would see: literal env values, the pod name for fieldRef, a marker for
 * secretKeyRef; args as yargs would parse them (`--base-url X` -> baseUrl).
 */
function processInputs(container: string, podName: string): { env: Record<string, string>; flags: Record<string, string> } {
  const env: Record<string, string> = {};
  for (const name of envNames(container)) {
    const item = envVar(container, name);
    const literal = /\n\s+value: "(.*)"/.exec(item)?.[1];
    if (literal !== undefined) env[name] = literal;
    else if (/fieldPath: metadata\.name/.test(item)) env[name] = podName;
    else if (/secretKeyRef:/.test(item)) env[name] = 'value-from-secret';
    else throw new Error(`unexpected env shape:\n${item}`);
  }
  const flags: Record<string, string> = {};
  const list = args(container);
  expect(list[0]).toBe('run');
  for (let i = 1; i < list.length; i += 2) {
    const flag = list[i]!;
    expect(flag).toMatch(/^--[a-z-]+$/);
    flags[flag.slice(2).replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())] = list[i + 1]!;
  }
  return { env, flags };
}

describe.skipIf(helm.skip)('helm chart (real helm)', () => {
  it('helm is installed', () => {
    expect(helm.path, 'helm is missing: run bash .ci/deploy-tools.sh').toBeDefined();
  });

  // The chart renders nothing without the values every install needs, so it is linted with the examples.
  it.each([
    ['standalone example', []],
    ['sidecar example', ['-f', SIDECAR_VALUES]],
    [
      'KEDA + ServiceMonitor + PrometheusRule + dashboard',
      ['--set', 'keda.enabled=true,serviceMonitor.enabled=true,prometheusRule.enabled=true,grafanaDashboard.enabled=true,worker.idempotency=postgres://pg/app'],
    ],
    ['a private CA by extraVolumes, extraVolumeMounts and extraEnv', ['-f', join(CHART_DIR, 'examples', 'private-ca-values.yaml')]],
    ['pinned by digest', ['--set', `image.digest=sha256:${'ab'.repeat(32)}`]],
  ])('helm lint --strict passes: %s', (_name, extra) => {
    const result = helmRun(['lint', '--strict', CHART_DIR, '-f', STANDALONE_VALUES, ...extra]);
    expect(result.stdout + result.stderr).toContain('1 chart(s) linted, 0 chart(s) failed');
    expect(result.code).toBe(0);
  });

  describe('default values (standalone)', () => {
    const docs = helm.path ? render() : [];

    it('renders exactly the default objects', () => {
      expect(docs.map((d) => d.kind).sort()).toEqual(['ConfigMap', 'Deployment', 'PersistentVolumeClaim', 'PodDisruptionBudget', 'Service']);
    });

    it('args carry run --handlers --base-url --destination only; no secret, no forward', () => {
      expect(args(workerContainer(docs))).toEqual([
        'run',
        '--handlers',
        '/app/handlers',
        '--base-url',
        'https://api.example.com',
        '--destination',
        'orders-consumer',
      ]);
    });

    it('every env var is a run option (DURABLE_WORKER_<UPPER_SNAKE>)', () => {
      const names = envNames(workerContainer(docs));
      expect(names.length).toBeGreaterThan(10);
      const known = contractEnvNames();
      expect(names.filter((n) => !known.has(n))).toEqual([]);
      expect(names).toEqual(
        expect.arrayContaining(['DURABLE_WORKER_SHUTDOWN_TIMEOUT', 'DURABLE_WORKER_IDEMPOTENCY', 'DURABLE_WORKER_VISIBILITY', 'DURABLE_WORKER_METRICS_PORT']),
      );
    });

    it('workerId prefix comes from the pod name (fieldRef metadata.name)', () => {
      expect(envVar(workerContainer(docs), 'DURABLE_WORKER_WORKER_ID_PREFIX')).toMatch(/valueFrom:\n\s+fieldRef:\n\s+fieldPath: metadata\.name/);
    });

    it('liveness /healthz and readiness /readyz on the metrics port 9464', () => {
      const container = workerContainer(docs);
      expect(block(container, 'livenessProbe')).toMatch(/httpGet:\n\s+path: \/healthz\n\s+port: metrics/);
      expect(block(container, 'readinessProbe')).toMatch(/httpGet:\n\s+path: \/readyz\n\s+port: metrics/);
      expect(block(container, 'ports')).toMatch(/- name: metrics\n\s+containerPort: 9464/);
      const service = onlyDoc(docs, 'Service').text;
      expect(service).toMatch(/- name: metrics\n\s+port: 9464\n\s+targetPort: metrics/);
    });

    it('grace period exceeds preStop sleep + shutdown timeout; preStop sleeps', () => {
      const shutdown = Number(/value: "(\d+)"/.exec(envVar(workerContainer(docs), 'DURABLE_WORKER_SHUTDOWN_TIMEOUT'))?.[1]);
      const preStop = Number(/command: \["sleep", "(\d+)"\]/.exec(workerContainer(docs))?.[1]);
      expect(shutdown).toBe(25);
      expect(preStop).toBe(5);
      expect(graceSeconds(docs)).toBe(40);
      expect(graceSeconds(docs)).toBeGreaterThan(shutdown + preStop);
    });

    it('grace period follows --shutdown-timeout', () => {
      const longer = render(['--set', 'worker.shutdownTimeoutSeconds=50,worker.visibilitySeconds=120']);
      expect(graceSeconds(longer)).toBe(65);
      expect(envVar(workerContainer(longer), 'DURABLE_WORKER_SHUTDOWN_TIMEOUT')).toContain('value: "50"');
    });

    it('non-root, read-only root filesystem, no privilege escalation, state on its claim (SQLite store), emptyDir /tmp', () => {
      const deployment = onlyDoc(docs, 'Deployment').text;
      const podSecurity = block(deployment, 'securityContext')!;
      expect(podSecurity).toMatch(/runAsNonRoot: true/);
      expect(podSecurity).toMatch(/runAsUser: 10001/);
      const container = workerContainer(docs);
      const securityContext = block(container, 'securityContext')!;
      expect(securityContext).toMatch(/readOnlyRootFilesystem: true/);
      expect(securityContext).toMatch(/allowPrivilegeEscalation: false/);
      expect(securityContext).toMatch(/drop:\n\s+- ALL/);
      expect(block(container, 'volumeMounts')).toMatch(/- name: durable-worker-state\n\s+mountPath: \/var\/lib\/durable-worker/);
      expect(block(container, 'volumeMounts')).toMatch(/- name: durable-worker-tmp\n\s+mountPath: \/tmp/);
      expect(listItem(deployment, 'name', 'durable-worker-state')).toBeDefined();
      expect(deployment).toMatch(/- name: durable-worker-state\n\s+persistentVolumeClaim:\n\s+claimName: rel-durable-worker-state/);
      expect(envVar(container, 'DURABLE_WORKER_IDEMPOTENCY')).toContain('sqlite:/var/lib/durable-worker/');
      expect(deployment).toMatch(/automountServiceAccountToken: false/);
    });

    it('handlers come from the chart ConfigMap, mounted read-only at --handlers', () => {
      const configMap = onlyDoc(docs, 'ConfigMap');
      expect(configMap.name).toBe('rel-durable-worker-handlers');
      expect(configMap.text).toMatch(/log-event\.mjs: "import \{ defineHandler \} from 'durable-worker'/);
      const deployment = onlyDoc(docs, 'Deployment').text;
      expect(deployment).toMatch(/- name: durable-worker-handlers\n\s+configMap:\n\s+name: rel-durable-worker-handlers/);
      expect(block(workerContainer(docs), 'volumeMounts')).toMatch(/- name: durable-worker-handlers\n\s+mountPath: \/app\/handlers\n\s+readOnly: true/);
      expect(deployment).toMatch(/checksum\/handlers: [0-9a-f]{64}/);
    });

    it('PodDisruptionBudget keeps a single replica evictable', () => {
      expect(onlyDoc(docs, 'PodDisruptionBudget').text).toMatch(/maxUnavailable: 1/);
    });

    it('handlers baked into the image: no ConfigMap, no handlers volume', () => {
      const baked = render(['--set', 'handlers.source=image,handlers.path=/srv/handlers']);
      expect(baked.some((d) => d.kind === 'ConfigMap')).toBe(false);
      expect(args(workerContainer(baked)).slice(0, 3)).toEqual(['run', '--handlers', '/srv/handlers']);
      expect(onlyDoc(baked, 'Deployment').text).not.toContain('durable-worker-handlers');
    });
  });

  describe('the real config loader accepts what the chart renders', () => {
    it('standalone with a created secret mounted as a file', () => {
      const secretDir = join(scratch, 'secret-mount');
      mkdirSync(secretDir, { recursive: true });
      writeFileSync(join(secretDir, 'client-secret'), 's3cret-from-file\n');
      const docs = render([
        '--set',
        `credentials.clientId=my-client,credentials.existingSecret=,credentials.create=true,credentials.clientSecret=x,credentials.mountPath=${secretDir},worker.limit=50,worker.visibilitySeconds=120`,
      ]);
      const { env, flags } = processInputs(workerContainer(docs), 'rel-durable-worker-7d9f-abcde');
      const config = loadWorkerConfig({ flags, env, cwd: scratch, hostname: 'not-used' });
      expect(config).toMatchObject({
        baseUrl: 'https://api.example.com',
        destination: 'orders-consumer',
        tenant: 'my-tenant',
        clientId: 'my-client',
        clientSecret: 's3cret-from-file',
        handlersDir: '/app/handlers',
        workerIdPrefix: 'rel-durable-worker-7d9f-abcde',
        limit: 50,
        visibilitySeconds: 120,
        idempotencyUrl: 'sqlite:/var/lib/durable-worker/idempotency.sqlite',
        metricsPort: 9464,
        metricsHost: '0.0.0.0',
        isolation: 'thread',
        shutdownTimeoutSeconds: 25,
      });
      expect(config.forwardUrl).toBeUndefined();
    });

    it('a shutdown timeout longer than the lease: a drain ends at the latest when the leases run out', () => {
      const docs = render([
        '--set',
        'credentials.clientId=my-client,credentials.existingSecret=worker-creds,credentials.mountAsFile=false,worker.shutdownTimeoutSeconds=90,worker.visibilitySeconds=60',
      ]);
      expect(graceSeconds(docs)).toBe(105);
      const { env, flags } = processInputs(workerContainer(docs), 'rel-pod');
      const config = loadWorkerConfig({ flags, env, cwd: scratch, hostname: 'not-used' });
      expect(config).toMatchObject({ visibilitySeconds: 60, shutdownTimeoutSeconds: 90 });
    });

    it('sidecar, structured mode, secret from env', () => {
      const docs = render(['-f', SIDECAR_VALUES, '--set', 'forward.mode=structured,credentials.mountAsFile=false']);
      const { env, flags } = processInputs(workerContainer(docs), 'orders-pod');
      const config = loadWorkerConfig({ flags, env, cwd: scratch, hostname: 'not-used' });
      expect(config).toMatchObject({
        forwardUrl: 'http://127.0.0.1:8080/events',
        forwardMode: 'structured',
        clientSecret: 'value-from-secret',
        idempotencyUrl: 'redis://redis-master.data.svc:6379',
        shutdownTimeoutSeconds: 30,
      });
    });
  });

  describe('a private CA', () => {
    it('worker.extraVolumes, worker.extraVolumeMounts and worker.extraEnv reach the pod and the worker container', () => {
      const docs = render(['-f', join(CHART_DIR, 'examples', 'private-ca-values.yaml')]);
      const container = workerContainer(docs);
      expect(envVar(container, 'NODE_EXTRA_CA_CERTS')).toMatch(/value: "?\/etc\/durable-worker\/ca\/ca\.crt"?$/m);
      expect(block(container, 'volumeMounts')).toMatch(/- mountPath: \/etc\/durable-worker\/ca\n\s+name: private-ca\n\s+readOnly: true/);
      expect(block(onlyDoc(docs, 'Deployment').text, 'volumes')).toMatch(/- configMap:\n\s+name: corporate-ca\n\s+name: private-ca/);
    });
  });

  describe('credentials', () => {
    const SECRET = 'TOPSECRET-d0-not-leak';

    it('created Secret, mounted as a file for --client-secret-file; never in args or env values', () => {
      const docs = render(['--set', `credentials.clientId=my-client,credentials.existingSecret=,credentials.create=true,credentials.clientSecret=${SECRET}`]);
      const secret = onlyDoc(docs, 'Secret');
      expect(secret.name).toBe('rel-durable-worker-credentials');
      expect(secret.text).toContain(`client-secret: "${Buffer.from(SECRET).toString('base64')}"`);
      const deployment = onlyDoc(docs, 'Deployment').text;
      expect(deployment).not.toContain(SECRET);
      expect(deployment).not.toContain(Buffer.from(SECRET).toString('base64'));
      const container = workerContainer(docs);
      expect(envVar(container, 'DURABLE_WORKER_CLIENT_ID')).toContain('value: "my-client"');
      expect(envVar(container, 'DURABLE_WORKER_CLIENT_SECRET_FILE')).toContain('value: "/var/run/secrets/durable-worker/client-secret"');
      expect(envNames(container)).not.toContain('DURABLE_WORKER_CLIENT_SECRET');
      expect(block(container, 'volumeMounts')).toMatch(
        /- name: durable-worker-credentials\n\s+mountPath: \/var\/run\/secrets\/durable-worker\n\s+readOnly: true/,
      );
      expect(deployment).toMatch(/- name: durable-worker-credentials\n\s+secret:\n\s+secretName: rel-durable-worker-credentials/);
      expect(deployment).toMatch(/checksum\/credentials: [0-9a-f]{64}/);
      expect(args(container).join(' ')).not.toMatch(/secret/i);
    });

    it('existing Secret as env from secretKeyRef (mountAsFile=false); the chart creates no Secret', () => {
      const docs = render([
        '--set',
        'credentials.clientId=my-client,credentials.existingSecret=worker-creds,credentials.clientSecretKey=secret,credentials.mountAsFile=false',
      ]);
      expect(docs.some((d) => d.kind === 'Secret')).toBe(false);
      const env = envVar(workerContainer(docs), 'DURABLE_WORKER_CLIENT_SECRET');
      expect(env).toMatch(/valueFrom:\n\s+secretKeyRef:\n\s+name: worker-creds\n\s+key: secret/);
      expect(env).not.toMatch(/value: /);
    });

    it('API key from the Secret as env', () => {
      const docs = render(['--set', 'credentials.useApiKey=true,credentials.existingSecret=worker-creds']);
      expect(envVar(workerContainer(docs), 'DURABLE_WORKER_API_KEY')).toMatch(/secretKeyRef:\n\s+name: worker-creds\n\s+key: api-key/);
      expect(envNames(workerContainer(docs))).not.toContain('DURABLE_WORKER_CLIENT_ID');
    });

    it('a client id without a secret source fails with a clear message', () => {
      expect(renderFailure(['--set', 'credentials.clientId=my-client,credentials.existingSecret='])).toContain(
        'credentials.clientId needs the client secret: set credentials.existingSecret, or credentials.create with credentials.clientSecret',
      );
    });

    it('without credentials, helm template fails naming the values to set (the worker would exit 2 in a crash loop)', () => {
      const bare = helmRun(['template', 'rel', CHART_DIR]);
      expect(bare.code).not.toBe(0);
      expect(bare.stderr).toContain('credentials are required');
      expect(bare.stderr).toContain('credentials.clientId');
      expect(bare.stderr).toContain('credentials.useApiKey');
      expect(renderFailure(['--set', 'credentials.clientId=,credentials.existingSecret='])).toContain('credentials are required');
    });

    it('without worker.baseUrl, worker.destination or image.repository, helm template fails naming it (no default points at a Service the chart does not create)', () => {
      expect(renderFailure(['--set', 'worker.baseUrl='])).toContain('worker.baseUrl is required');
      expect(renderFailure(['--set', 'worker.destination='])).toContain('worker.destination is required');
      expect(renderFailure(['--set', 'image.repository='])).toContain('image.repository is required');
    });
  });

  describe('sidecar', () => {
    const docs = helm.path ? render(['-f', SIDECAR_VALUES]) : [];

    it('runs the app container and the worker forwarding to it over loopback', () => {
      const deployment = onlyDoc(docs, 'Deployment').text;
      const containers = [...block(deployment, 'containers')!.matchAll(/^ {8}- name: (\S+)$/gm)].map((m) => m[1]);
      expect(containers).toEqual(['orders-app', 'durable-worker']);
      expect(listItem(deployment, 'name', 'orders-app')).toMatch(/image: "registry\.example\.com\/orders-app:1\.4\.2"/);
      const workerArgs = args(workerContainer(docs));
      expect(workerArgs).toEqual([
        'run',
        '--base-url',
        'https://api.example.com',
        '--destination',
        'orders-consumer',
        '--forward-url',
        'http://127.0.0.1:8080/events',
      ]);
    });

    it('the app outlives the worker drain; the grace period covers both', () => {
      const app = listItem(onlyDoc(docs, 'Deployment').text, 'name', 'orders-app')!;
      const appSleep = Number(/command: \["sleep", "(\d+)"\]/.exec(app)?.[1]);
      expect(appSleep).toBe(5 + 30);
      expect(graceSeconds(docs)).toBe(45);
      expect(graceSeconds(docs)).toBeGreaterThan(appSleep);
    });

    it('structured mode goes in by env', () => {
      const structured = render(['-f', SIDECAR_VALUES, '--set', 'forward.mode=structured']);
      expect(envVar(workerContainer(structured), 'DURABLE_WORKER_FORWARD_MODE')).toContain('value: "structured"');
    });

    it('forward.rate and forward.concurrency go in by env and reach the config; a bad rate fails the render', () => {
      const limited = render(['-f', SIDECAR_VALUES, '--set', 'forward.rate=adaptive:40/1s,forward.concurrency=8,credentials.mountAsFile=false']);
      const { env, flags } = processInputs(workerContainer(limited), 'orders-pod');
      expect(loadWorkerConfig({ flags, env, cwd: scratch, hostname: 'not-used' })).toMatchObject({ forwardRate: 'adaptive:40/1s', forwardConcurrency: 8 });
      expect(workerContainer(render(['-f', SIDECAR_VALUES]))).not.toContain('DURABLE_WORKER_FORWARD_RATE');
      expect(renderFailure(['-f', SIDECAR_VALUES, '--set', 'forward.rate=fast'])).toContain('forward.rate');
    });

    it('needs the app image', () => {
      expect(renderFailure(['--set', 'mode=sidecar'])).toContain('mode sidecar needs sidecar.app.image.repository');
    });

    it('needs the app version: no latest default; a digest pins it', () => {
      expect(renderFailure(['-f', SIDECAR_VALUES, '--set', 'sidecar.app.image.tag='])).toContain(
        'mode sidecar needs sidecar.app.image.tag or sidecar.app.image.digest',
      );
      const digest = `sha256:${'cd'.repeat(32)}`;
      const app = listItem(
        onlyDoc(render(['-f', SIDECAR_VALUES, '--set', `sidecar.app.image.tag=,sidecar.app.image.digest=${digest}`]), 'Deployment').text,
        'name',
        'orders-app',
      )!;
      expect(app).toContain(`image: "registry.example.com/orders-app@${digest}"`);
    });

    it('the named template durable-worker.sidecarContainer works from a parent chart', () => {
      const parent = join(scratch, 'my-app');
      mkdirSync(join(parent, 'templates'), { recursive: true });
      mkdirSync(join(parent, 'charts'));
      cpSync(CHART_DIR, join(parent, 'charts', 'durable-worker'), { recursive: true });
      writeFileSync(join(parent, 'Chart.yaml'), 'apiVersion: v2\nname: my-app\nversion: 1.0.0\ndependencies:\n  - name: durable-worker\n    version: 0.1.0\n');
      writeFileSync(
        join(parent, 'values.yaml'),
        'durable-worker:\n  workload:\n    enabled: false\n  image:\n    repository: registry.example.com/team/durable-worker\n  credentials:\n    useApiKey: true\n    existingSecret: worker-key\n  worker:\n    baseUrl: https://api.example.com\n    destination: my-consumer\n  handlers:\n    source: none\n  sidecar:\n    app:\n      port: 3000\n  forward:\n    path: /cloudevents\n',
      );
      writeFileSync(
        join(parent, 'templates', 'deployment.yaml'),
        [
          '{{- $dw := dict "Values" (index .Values "durable-worker") "Release" .Release "Chart" (dict "Name" "durable-worker" "AppVersion" "0.1.0") }}',
          'apiVersion: apps/v1',
          'kind: Deployment',
          'metadata:',
          '  name: my-app',
          'spec:',
          '  selector: {matchLabels: {app: my-app}}',
          '  template:',
          '    metadata: {labels: {app: my-app}}',
          '    spec:',
          '      containers:',
          '        - name: my-app',
          '          image: my-app:1',
          '        {{- include "durable-worker.sidecarContainer" $dw | nindent 8 }}',
          '      volumes:',
          '        {{- include "durable-worker.sidecarVolumes" $dw | nindent 8 }}',
          '',
        ].join('\n'),
      );
      const result = helmRun(['template', 'x', parent]);
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      const docs = splitManifests(result.stdout);
      // workload.enabled=false: the subchart adds no workload of its own
      // (its state claim aside: the SQLite store by default)
      expect(docs.map((d) => `${d.kind}/${d.name}`)).toEqual(['PersistentVolumeClaim/x-durable-worker-state', 'Deployment/my-app']);
      expect(args(workerContainer(docs))).toEqual([
        'run',
        '--base-url',
        'https://api.example.com',
        '--destination',
        'my-consumer',
        '--forward-url',
        'http://127.0.0.1:3000/cloudevents',
      ]);
      expect(onlyDoc(docs, 'Deployment').text).toMatch(/- name: durable-worker-state\n\s+persistentVolumeClaim:\n\s+claimName: x-durable-worker-state/);
    });
  });

  describe('KEDA, ServiceMonitor, PrometheusRule, dashboard', () => {
    const docs = helm.path
      ? render([
          '--set',
          'keda.enabled=true,keda.maxReplicaCount=4,serviceMonitor.enabled=true,prometheusRule.enabled=true,grafanaDashboard.enabled=true,worker.idempotency=redis://redis:6379',
        ])
      : [];

    it('KEDA scales the Deployment on durable_worker_backlog_age_seconds; the Deployment leaves replicas to it', () => {
      const scaled = onlyDoc(docs, 'ScaledObject').text;
      expect(scaled).toMatch(/scaleTargetRef:\n\s+name: rel-durable-worker/);
      expect(scaled).toMatch(/- type: prometheus/);
      expect(scaled).toContain('query: "max(durable_worker_backlog_age_seconds{namespace=\\"jobs\\",destination=\\"orders-consumer\\"})"');
      expect(scaled).toContain('threshold: "30"');
      expect(scaled).toMatch(/minReplicaCount: 1\n\s+maxReplicaCount: 4/);
      expect(onlyDoc(docs, 'Deployment').text).not.toMatch(/^\s+replicas:/m);
    });

    it('ServiceMonitor scrapes the metrics port', () => {
      const monitor = onlyDoc(docs, 'ServiceMonitor').text;
      expect(monitor).toMatch(/- port: metrics\n\s+path: \/metrics/);
      expect(monitor).toMatch(/matchNames:\n\s+- jobs/);
    });

    it('the dashboard ConfigMap carries grafana_dashboard "1" and the very JSON of deploy/grafana', () => {
      const dashboard = splitManifests(docs.map((d) => `---\n${d.text}`).join('\n')).find(
        (d) => d.kind === 'ConfigMap' && d.name === 'rel-durable-worker-dashboard',
      );
      expect(dashboard).toBeDefined();
      expect(dashboard!.text).toMatch(/grafana_dashboard: "1"/);
      const json = dashboard!.text
        .split(/durable-worker-dashboard\.json: \|-\n/)[1]!
        .split('\n')
        .map((l) => l.slice(4))
        .join('\n');
      expect(JSON.parse(json)).toEqual(JSON.parse(readFileSync(join(REPO_ROOT, 'deploy', 'grafana', 'durable-worker-dashboard.json'), 'utf8')));
    });

    it.skipIf(promtool.skip)('the PrometheusRule spec passes promtool check rules and the same unit tests', () => {
      expect(promtool.path, 'promtool is missing: apt-get install prometheus').toBeDefined();
      const rule = onlyDoc(docs, 'PrometheusRule').text;
      const spec = rule
        .split(/^spec:\n/m)[1]!
        .split('\n')
        .map((l) => l.slice(2))
        .join('\n');
      const dir = join(scratch, 'rendered-rules');
      mkdirSync(join(dir, 'tests'), { recursive: true });
      writeFileSync(join(dir, 'durable-worker-rules.yaml'), spec);
      cpSync(join(REPO_ROOT, 'deploy', 'prometheus', 'tests'), join(dir, 'tests'), { recursive: true });
      const check = run(promtool.path!, ['check', 'rules', join(dir, 'durable-worker-rules.yaml')]);
      const alerts = readFileSync(join(REPO_ROOT, 'deploy', 'prometheus', 'durable-worker-rules.yaml'), 'utf8').match(/^\s+- alert: /gm)?.length;
      expect(check.stdout + check.stderr).toContain(`SUCCESS: ${alerts} rules found`);
      expect(check.code).toBe(0);
      const tests = run(promtool.path!, ['test', 'rules', 'tests/durable-worker-rules.test.yaml'], { cwd: dir });
      expect(tests.stdout + tests.stderr).toContain('SUCCESS');
      expect(tests.code).toBe(0);
    });
  });

  describe('invalid values fail with a clear message', () => {
    it.each([
      [
        ['--set', 'replicaCount=2'],
        'replicaCount=2 needs a shared idempotency store: worker.idempotency is "sqlite:/var/lib/durable-worker/idempotency.sqlite"',
      ],
      [['--set', 'replicaCount=3,worker.idempotency=memory'], 'replicaCount=3 needs a shared idempotency store: worker.idempotency is "memory"'],
      [['--set', 'keda.enabled=true,keda.maxReplicaCount=3'], 'keda.maxReplicaCount=3 needs a shared idempotency store'],
      [
        ['--set', 'lifecycle.terminationGracePeriodSeconds=20'],
        'lifecycle.terminationGracePeriodSeconds (20) must be greater than worker.shutdownTimeoutSeconds + lifecycle.preStopSleepSeconds (30)',
      ],
      [
        ['--set', 'credentials.create=true,credentials.existingSecret=x,credentials.clientId=c,credentials.clientSecret=s'],
        'set either credentials.existingSecret or credentials.create, not both',
      ],
    ])('helm template %j', (extra, message) => {
      expect(renderFailure(extra)).toContain(message);
    });

    it.each([
      [['--set', 'worker.limit=500'], 'worker.limit: Must be less than or equal to 100'],
      [['--set', 'mode=daemon'], 'mode: mode must be one of the following: "standalone", "sidecar"'],
      [['--set', 'worker.idempotency=mysql://db'], 'worker.idempotency: Does not match pattern'],
      [['--set', 'keda.minReplicaCount=0'], 'keda.minReplicaCount: Must be greater than or equal to 1'],
      [['--set', 'worker.visibilitySeconds=abc'], 'worker.visibilitySeconds: Invalid type. Expected: integer, given: string'],
    ])('schema rejects %j', (extra, message) => {
      const stderr = renderFailure(extra);
      expect(stderr).toContain("values don't meet the specifications of the schema");
      expect(stderr).toContain(message);
    });

    it('two replicas with a shared store render', () => {
      const docs = render(['--set', 'replicaCount=2,worker.idempotency=postgres://app:app@pg:5432/app']);
      expect(onlyDoc(docs, 'Deployment').text).toMatch(/^ {2}replicas: 2$/m);
    });
  });

  describe('dead-letter sink', () => {
    const sinkOf = (docs: ManifestDoc[]) => /value: "(.*)"/.exec(envVar(workerContainer(docs), 'DURABLE_WORKER_DEAD_LETTER'))?.[1];

    it('follows a shared idempotency store by default, else a file under stateDir; a given one wins', () => {
      expect(sinkOf(render())).toBe('file:/var/lib/durable-worker/dead-letter.jsonl');
      expect(sinkOf(render(['--set', 'worker.stateDir=/state/']))).toBe('file:/state/dead-letter.jsonl');
      expect(sinkOf(render(['--set', 'worker.idempotency=postgres://app:app@pg:5432/app']))).toBe('postgres://app:app@pg:5432/app');
      expect(sinkOf(render(['--set', 'replicaCount=3,worker.idempotency=rediss://cache:6380/1']))).toBe('rediss://cache:6380/1');
      expect(sinkOf(render(['--set', 'worker.idempotency=redis://cache,worker.deadLetter=postgres://pg/app']))).toBe('postgres://pg/app');
      // The config loader reads what the chart renders: the shared default is the sink the worker opens.
      const docs = render(['--set', 'replicaCount=2,worker.idempotency=redis://cache:6379,credentials.mountAsFile=false']);
      const { env, flags } = processInputs(workerContainer(docs), 'rel-pod');
      expect(loadWorkerConfig({ flags, env, cwd: scratch, hostname: 'h' }).deadLetterUrl).toBe('redis://cache:6379');
    });

    it.each([
      [
        ['--set', 'replicaCount=2,worker.idempotency=redis://cache,worker.deadLetter=file:/var/lib/durable-worker/dl.jsonl'],
        'replicaCount=2 needs a shared dead-letter sink: worker.deadLetter is "file:/var/lib/durable-worker/dl.jsonl"',
      ],
      [
        ['--set', 'keda.enabled=true,keda.maxReplicaCount=4,worker.idempotency=postgres://pg/app,worker.deadLetter=sqlite:/var/lib/durable-worker/dl.sqlite'],
        'keda.maxReplicaCount=4 needs a shared dead-letter sink',
      ],
    ])('refuses several replicas with a sink on the emptyDir, naming the values to set: %j', (extra, message) => {
      const stderr = renderFailure(extra);
      expect(stderr).toContain(message);
      expect(stderr).toContain(
        'Set worker.deadLetter to redis://... or postgres://..., or leave it empty to follow a redis:// or postgres:// worker.idempotency.',
      );
    });

    it('the schema takes the four kinds of sink', () => {
      expect(renderFailure(['--set', 'worker.deadLetter=s3://bucket'])).toContain('worker.deadLetter: Does not match pattern');
      for (const url of ['sqlite:/var/lib/durable-worker/dl.sqlite', 'file:/tmp/dl.jsonl', 'redis://r:6379', 'postgresql://pg/app'])
        expect(sinkOf(render(['--set', `worker.deadLetter=${url}`]))).toBe(url);
    });

    it('NOTES say where the dead letters are (no password) and how to list them', () => {
      // NOTES.txt only renders at install; rendered here through a ConfigMap of a copy of the chart.
      const copy = join(scratch, 'notes-chart');
      cpSync(CHART_DIR, copy, { recursive: true });
      cpSync(join(copy, 'templates', 'NOTES.txt'), join(copy, 'notes.txt'));
      writeFileSync(
        join(copy, 'templates', 'notes-render.yaml'),
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\ndata:\n  notes: |\n{{ tpl (.Files.Get "notes.txt") . | indent 4 }}\n',
      );
      const notes = (extra: string[]) => {
        const result = helmRun([
          'template',
          'rel',
          copy,
          '--namespace',
          'jobs',
          '--show-only',
          'templates/notes-render.yaml',
          '-f',
          STANDALONE_VALUES,
          ...extra,
        ]);
        if (result.code !== 0) throw new Error(result.stderr);
        return result.stdout;
      };
      const shared = notes(['--set', 'worker.idempotency=postgres://app:s3cret@pg/app']);
      expect(shared).toContain('Dead letters (postgres://app:***@pg/app)');
      expect(shared).toContain('kubectl -n jobs exec deploy/rel-durable-worker -c durable-worker -- durable-worker dead-letters list --state dead');
      expect(shared).not.toContain('s3cret');
      expect(shared).not.toContain('emptyDir');
      expect(notes(['--set', 'persistence.enabled=false,worker.allowEphemeralState=true'])).toContain("They live on the pod's emptyDir and go with it");
      expect(notes([])).toContain('is on the PersistentVolumeClaim rel-durable-worker-state, kept by helm uninstall');
      expect(notes([])).not.toContain('emptyDir');
    });
  });
});

describe('chart copies stay identical to deploy/', () => {
  it.each([
    ['deploy/prometheus/durable-worker-rules.yaml', 'helm/durable-worker/files/durable-worker-rules.yaml'],
    ['deploy/grafana/durable-worker-dashboard.json', 'helm/durable-worker/files/durable-worker-dashboard.json'],
  ])('%s == %s', (source, copy) => {
    const a = readFileSync(join(REPO_ROOT, source), 'utf8');
    expect(a.length).toBeGreaterThan(1000);
    expect(readFileSync(join(REPO_ROOT, copy), 'utf8')).toBe(a);
  });
});
