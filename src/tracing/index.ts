/**
 * Tracing, switched on by `--otel` (docs/tracing.md): the SDK and every OpenTelemetry module behind it are
 * imported here on demand, so a worker without `--otel` loads none of them (test/tracing).
 */
import { setHandlerScope } from './handler-scope.js';
import { NOOP_TRACER, type RunTracer } from './run-tracer.js';

export { handlerScope, type HandlerScope } from './handler-scope.js';
export { NOOP_TRACER } from './run-tracer.js';
export type { LeaseTrace, RunTrace, RunTracer, SettleTrace, TraceScope, TracedAckResult, TracedError, TracedOutcome } from './run-tracer.js';
export { eventTraceCarrier, formatTraceparent, parseTraceparent, traceLogFields, type TraceCarrier } from './trace-context.js';

export interface Tracing {
  readonly tracer: RunTracer;
  /** Flushes buffered spans (threads: before the pool ends them). */
  flush(): Promise<void>;
  /** Flushes and stops exporting. Idempotent. */
  close(): Promise<void>;
}

const OFF: Tracing = Object.freeze({ tracer: NOOP_TRACER, flush: async () => {}, close: async () => {} });

/** The standard switch that turns every SDK off whatever the code asks (OpenTelemetry's environment spec). */
export function sdkDisabled(env: Record<string, string | undefined>): boolean {
  return env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true';
}

/**
 * Starts tracing in this thread when `enabled`: the SDK (sdk.ts), the run tracer for `destination`
 * (main thread), the handler scope (any thread). Off, it returns the no-op at once.
 */
export async function startTracing(options: { enabled: boolean; destination?: string; env?: Record<string, string | undefined> }): Promise<Tracing> {
  const env = options.env ?? process.env;
  if (!options.enabled || sdkDisabled(env)) return OFF;
  const [{ startTracingSdk }, { OtelRunTracer }, { otelHandlerScope }] = await Promise.all([
    import('./sdk.js'),
    import('./otel-tracer.js'),
    import('./otel-handler-scope.js'),
  ]);
  const sdk = await startTracingSdk(env);
  setHandlerScope(otelHandlerScope);
  return {
    tracer: options.destination === undefined ? NOOP_TRACER : new OtelRunTracer(options.destination),
    flush: () => sdk.forceFlush(),
    close: async () => {
      await sdk.shutdown();
      setHandlerScope(undefined);
    },
  };
}
