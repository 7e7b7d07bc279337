import { describe, expect, it } from 'vitest';
import { loadWorkerConfig } from '../../src/config/load.js';
import { exportSettings } from '../../src/tracing/sdk.js';
import { listItem, onlyDoc, splitManifests } from './manifests.js';
import { CHART_DIR, run, STANDALONE_VALUES, toolGate } from './tools.js';

const helm = toolGate('helm', 'bash .ci/deploy-tools.sh builds it with `go install helm.sh/helm/v3/cmd/helm@v3.16.4`');

function template(set: string): { code: number; stdout: string; stderr: string } {
  return run(helm.path!, ['template', 'rel', CHART_DIR, '--namespace', 'jobs', '-f', STANDALONE_VALUES, ...(set ? ['--set', set] : [])]);
}

/** The worker container's env: literal values by name, `fieldRef` ones as the marker `<field>`. */
function workerEnv(set: string): Record<string, string> {
  const result = template(set);
  if (result.code !== 0) throw new Error(result.stderr);
  const container = listItem(onlyDoc(splitManifests(result.stdout), 'Deployment').text, 'name', 'durable-worker')!;
  const env: Record<string, string> = {};
  for (const [, name] of container.matchAll(/^\s*- name: ((?:DURABLE_WORKER|OTEL)_[A-Z_]+)$/gm)) {
    const item = listItem(container, 'name', name!)!;
    env[name!] = /\n\s+value: "(.*)"/.exec(item)?.[1] ?? (/fieldRef:/.test(item) ? '<field>' : '<secret>');
  }
  return env;
}

describe.skipIf(helm.skip)('chart values for OpenTelemetry (real helm)', () => {
  it('off by default: no --otel and no OTEL_* variable', () => {
    expect(Object.keys(workerEnv('')).filter((name) => name.includes('OTEL'))).toEqual([]);
  });

  it('on: --otel by env and the standard variables the SDK reads, which the worker accepts', () => {
    const env = workerEnv(
      'credentials.useApiKey=true,tracing.enabled=true,tracing.otlpEndpoint=http://otel-collector.observability:4318,tracing.protocol=http/json,tracing.sampler=parentbased_traceidratio,tracing.samplerArg=0.25,tracing.resourceAttributes=deployment.environment=prod',
    );
    expect(env).toMatchObject({
      DURABLE_WORKER_OTEL: 'true',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector.observability:4318',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'rel-durable-worker',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_POD_NAME: '<field>',
      OTEL_RESOURCE_ATTRIBUTES: 'k8s.pod.name=$(OTEL_POD_NAME),deployment.environment=prod',
    });
    const config = loadWorkerConfig({ flags: { baseUrl: 'http://api', destination: 'd', apiKey: 'k' }, env, cwd: '/tmp', hostname: 'h' });
    expect(config.otel).toBe(true);
    expect(exportSettings(env)).toEqual({ exporters: ['otlp'], protocol: 'http/json' });
  });

  it('the default endpoint is left to the exporter (a collector on the pod loopback)', () => {
    const env = workerEnv('tracing.enabled=true');
    expect(env.OTEL_EXPORTER_OTLP_ENDPOINT).toBeUndefined();
    expect(env.OTEL_EXPORTER_OTLP_PROTOCOL).toBe('http/protobuf');
  });

  it('the schema refuses a protocol the worker does not bundle', () => {
    const result = template('tracing.enabled=true,tracing.protocol=grpc');
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/tracing\.protocol|protocol/);
  });
});
