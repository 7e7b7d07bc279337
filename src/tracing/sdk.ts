/**
 * Starts the OpenTelemetry SDK for traces in this thread (main thread or a handler thread), the way
 * the SDK's own auto-configuration reads the standard environment: the exporter from
 * OTEL_TRACES_EXPORTER (`otlp`, `console` or `none`), its protocol from
 * OTEL_EXPORTER_OTLP_TRACES_PROTOCOL / OTEL_EXPORTER_OTLP_PROTOCOL (`http/protobuf`, the default, or
 * `http/json`), endpoint, headers, timeout and compression read by the exporter itself
 * (OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT...), the sampler from OTEL_TRACES_SAMPLER[_ARG], batching from
 * OTEL_BSP_*, the resource from OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES. Only the trace
 * packages are used (not @opentelemetry/sdk-node, which brings metrics, logs, gRPC and
 * instrumentations the worker does not use). Imported only when tracing is on: every module of the
 * SDK is loaded here, lazily.
 */
import { ConfigError } from '../errors.js';
import { importOptional } from '../runtime/optional-package.js';

export interface TracingSdk {
  forceFlush(): Promise<void>;
  /** Flushes what is buffered, then stops exporting. Idempotent. */
  shutdown(): Promise<void>;
}

type Env = Record<string, string | undefined>;

const PROTOCOLS = ['http/protobuf', 'http/json'] as const;
const EXPORTERS = ['otlp', 'console', 'none'] as const;

function envList(env: Env, name: string, fallback: string): string[] {
  const raw = env[name]?.trim();
  return (raw ? raw : fallback)
    .split(',')
    .map((item) => item.trim().toLowerCase())
    .filter((item) => item !== '');
}

/** The exporters and the OTLP protocol asked for; a value we cannot honour is a configuration error (exit 2). */
export function exportSettings(env: Env): { exporters: (typeof EXPORTERS)[number][]; protocol: (typeof PROTOCOLS)[number] } {
  const exporters = envList(env, 'OTEL_TRACES_EXPORTER', 'otlp');
  for (const name of exporters) {
    if (!(EXPORTERS as readonly string[]).includes(name)) {
      throw new ConfigError(`OTEL_TRACES_EXPORTER must be otlp, console or none with --otel (got ${JSON.stringify(name)})`, '--otel');
    }
  }
  const protocolVariable = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim() ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = env[protocolVariable]?.trim() || 'http/protobuf';
  if (!(PROTOCOLS as readonly string[]).includes(protocol)) {
    throw new ConfigError(
      `${protocolVariable} must be http/protobuf or http/json with --otel (got ${JSON.stringify(protocol)}; grpc is not bundled)`,
      '--otel',
    );
  }
  return { exporters: exporters.includes('none') ? [] : (exporters as (typeof EXPORTERS)[number][]), protocol: protocol as (typeof PROTOCOLS)[number] };
}

export async function startTracingSdk(env: Env = process.env): Promise<TracingSdk> {
  const settings = exportSettings(env);
  const [
    { NodeTracerProvider, BatchSpanProcessor, SimpleSpanProcessor, ConsoleSpanExporter },
    { defaultResource, detectResources, envDetector, resourceFromAttributes },
  ] = await Promise.all([
    importOptional('@opentelemetry/sdk-trace-node', '--otel', '--otel', () => import('@opentelemetry/sdk-trace-node')),
    importOptional('@opentelemetry/resources', '--otel', '--otel', () => import('@opentelemetry/resources')),
  ]);
  const spanProcessors = [];
  for (const name of settings.exporters) {
    if (name === 'console') {
      spanProcessors.push(new SimpleSpanProcessor(new ConsoleSpanExporter()));
      continue;
    }
    const need = `--otel with OTLP over ${settings.protocol}`;
    const { OTLPTraceExporter } =
      settings.protocol === 'http/json'
        ? await importOptional('@opentelemetry/exporter-trace-otlp-http', need, '--otel', () => import('@opentelemetry/exporter-trace-otlp-http'))
        : await importOptional('@opentelemetry/exporter-trace-otlp-proto', need, '--otel', () => import('@opentelemetry/exporter-trace-otlp-proto'));
    spanProcessors.push(new BatchSpanProcessor(new OTLPTraceExporter()));
  }
  // Later wins: OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES over our default name.
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': 'durable-worker' }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new NodeTracerProvider({ resource, spanProcessors });
  // The global tracer provider, the W3C trace-context and baggage propagators and the
  // AsyncLocalStorage context manager: what handler code's own instrumentation finds.
  provider.register();
  let shutdown: Promise<void> | undefined;
  return {
    forceFlush: () => provider.forceFlush(),
    shutdown: () =>
      (shutdown ??= provider.shutdown().finally(async () => {
        // The globals go with the provider, so a later start in this thread registers afresh.
        const api = await import('@opentelemetry/api');
        api.trace.disable();
        api.context.disable();
        api.propagation.disable();
      })),
  };
}
