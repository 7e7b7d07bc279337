import { context, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import type { HandlerScope } from './handler-scope.js';
import { carrierOf, remoteSpanContext } from './otel-tracer.js';

/**
 * The handler scope with the SDK running in this thread: the job's carrier (the process span, made
 * where the lease is held) becomes the active context, through the context manager the SDK
 * registered (AsyncLocalStorage), so it follows the handler's awaits.
 */
export const otelHandlerScope: HandlerScope = {
  run(carrier, fn) {
    const spanContext = remoteSpanContext(carrier);
    if (spanContext === undefined) return fn();
    return context.with(trace.setSpanContext(ROOT_CONTEXT, spanContext), fn);
  },
  activeCarrier() {
    const spanContext = trace.getSpanContext(context.active());
    return spanContext !== undefined && trace.isSpanContextValid(spanContext) ? carrierOf(spanContext) : undefined;
  },
};
