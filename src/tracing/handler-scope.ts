/**
 * Where a handler runs, in any thread: in the context of its run's process span, so that the spans
 * the handler's own instrumented calls make nest under it. With tracing off in this thread the scope
 * is the identity (one call per run, no OpenTelemetry module); `startTracing` (index.ts) installs the
 * OpenTelemetry one in each thread where the SDK runs.
 */
import type { TraceCarrier } from './trace-context.js';

export interface HandlerScope {
  /** Calls `fn` with the run's span context active (carrier from the job), or as is. */
  run<T>(carrier: TraceCarrier | undefined, fn: () => T): T;
  /** The active span's context, to pass on (the forwarding handler's request); undefined when off. */
  activeCarrier(): TraceCarrier | undefined;
}

const IDENTITY: HandlerScope = {
  run: (_carrier, fn) => fn(),
  activeCarrier: () => undefined,
};

let current: HandlerScope = IDENTITY;

export function handlerScope(): HandlerScope {
  return current;
}

/** Installed once per thread by the tracing start; `undefined` puts the identity back (tests). */
export function setHandlerScope(scope: HandlerScope | undefined): void {
  current = scope ?? IDENTITY;
}
