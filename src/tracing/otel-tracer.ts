/**
 * The RunTracer with tracing on: spans through `@opentelemetry/api` only (the SDK behind it is
 * started by sdk.ts). Loaded by index.ts only when `--otel` is set.
 *
 * Trace structure (messaging semantic conventions, "Consumer spans"): a `receive` span per pull that
 * returned a lease, a root linked to the creation context of each event that carries one (a batch
 * mixes events of many traces, so it cannot be their child); a `process` span per handler run, the
 * CHILD of its event's creation context when the event carries one (the conventions make the link a
 * SHOULD and the parent a choice for single-message processing: a child puts the handler's work in
 * the producer's trace, which is what one follows from an ingest to its effects), linked to that
 * context and to the receive span; else the child of the receive span. `settle` is the child of the
 * receive span, and store and dead-letter calls are children of the span they happen in.
 */
import {
  context,
  createTraceState,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type SpanContext,
  type Tracer,
} from '@opentelemetry/api';
import type { AckStatus } from '../types.js';
import { ATTR, MESSAGING_SYSTEM, spanName } from './attributes.js';
import type { LeaseTrace, RunTrace, RunTracer, SettleTrace, TracedAckResult, TracedError, TracedLease, TracedOutcome, TracedRun } from './run-tracer.js';
import { eventTraceCarrier, formatTraceparent, parseTraceparent, type TraceCarrier } from './trace-context.js';

/** A carrier as a remote span context, or undefined when it holds no valid one. */
export function remoteSpanContext(carrier: TraceCarrier | undefined): SpanContext | undefined {
  const parent = carrier === undefined ? undefined : parseTraceparent(carrier.traceparent);
  if (parent === undefined) return undefined;
  const spanContext: SpanContext = { traceId: parent.traceId, spanId: parent.spanId, traceFlags: parent.traceFlags, isRemote: true };
  if (carrier?.tracestate !== undefined) spanContext.traceState = createTraceState(carrier.tracestate);
  return spanContext;
}

export function carrierOf(spanContext: SpanContext): TraceCarrier {
  const traceparent = formatTraceparent(spanContext);
  const tracestate = spanContext.traceState?.serialize();
  return tracestate ? { traceparent, tracestate } : { traceparent };
}

function endWithError(span: Span, error: unknown): void {
  const err = error as { message?: unknown; stack?: unknown; code?: unknown; name?: unknown } | null | undefined;
  const message = typeof err?.message === 'string' ? err.message : String(error);
  const code = typeof err?.code === 'string' ? err.code : undefined;
  const name = typeof err?.name === 'string' && err.name !== 'Error' ? err.name : (code ?? 'Error');
  span.recordException({ name, message, ...(typeof err?.stack === 'string' ? { stack: err.stack } : {}), ...(code === undefined ? {} : { code }) });
  span.setAttribute(ATTR.errorType, code ?? name);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
}

/** Runs `work` in a child span of `parent`, ended when it settles; its own calls see it active. */
function callIn<T>(tracer: Tracer, parent: Context, name: string, work: () => Promise<T>): Promise<T> {
  const span = tracer.startSpan(name, { kind: SpanKind.INTERNAL }, parent);
  return context.with(trace.setSpan(parent, span), work).then(
    (value) => {
      span.end();
      return value;
    },
    (err: unknown) => {
      endWithError(span, err);
      span.end();
      throw err;
    },
  );
}

/** A span of the run path with its context: what `call` makes children of. */
class OtelSpanScope {
  protected readonly tracer: Tracer;
  protected readonly span: Span;
  readonly #context: Context;

  constructor(tracer: Tracer, span: Span, parent: Context) {
    this.tracer = tracer;
    this.span = span;
    this.#context = trace.setSpan(parent, span);
  }

  call<T>(name: string, work: () => Promise<T>): Promise<T> {
    return callIn(this.tracer, this.#context, name, work);
  }
}

class OtelRunTrace extends OtelSpanScope implements RunTrace {
  readonly carrier: TraceCarrier;

  constructor(tracer: Tracer, span: Span, parent: Context) {
    super(tracer, span, parent);
    this.carrier = carrierOf(span.spanContext());
  }

  end(outcome: TracedOutcome, error?: TracedError): void {
    this.span.setAttribute(ATTR.outcome, outcome);
    // A duplicate, an unstarted run or one deferred unrun did not fail; failed, dead-lettered and failed-then-deferred runs did.
    if (error !== undefined && (outcome === 'failed' || outcome === 'dead_lettered' || outcome === 'deferred'))
      endWithError(this.span, { name: error.code ?? 'Error', ...error });
    this.span.end();
  }
}

class OtelSettleTrace extends OtelSpanScope implements SettleTrace {
  end(result: TracedAckResult, error?: unknown): void {
    this.span.setAttribute(ATTR.ackResult, result);
    if (result === 'error') endWithError(this.span, error ?? new Error('the ack was not answered'));
    this.span.end();
  }
}

class OtelLeaseTrace implements LeaseTrace {
  readonly #tracer: Tracer;
  readonly #destination: string;
  readonly #lease: TracedLease;
  readonly #receive: SpanContext;
  readonly #context: Context;

  constructor(tracer: Tracer, destination: string, lease: TracedLease, receive: Span) {
    this.#tracer = tracer;
    this.#destination = destination;
    this.#lease = lease;
    this.#receive = receive.spanContext();
    this.#context = trace.setSpan(ROOT_CONTEXT, receive);
  }

  call<T>(name: string, work: () => Promise<T>): Promise<T> {
    return callIn(this.#tracer, this.#context, name, work);
  }

  process(run: TracedRun): RunTrace {
    const creation = remoteSpanContext(eventTraceCarrier(run.event));
    const parent = creation === undefined ? this.#context : trace.setSpanContext(ROOT_CONTEXT, creation);
    const links: Link[] = creation === undefined ? [] : [{ context: creation }, { context: this.#receive }];
    const { event, ctx } = run;
    const attributes: Attributes = {
      ...this.#common(),
      [ATTR.operationType]: 'process',
      [ATTR.operationName]: 'process',
      [ATTR.clientId]: ctx.workerId,
      [ATTR.messageId]: event.id,
      [ATTR.eventType]: event.type,
      [ATTR.eventSubject]: event.subject,
      [ATTR.sequence]: event.sequence,
      [ATTR.leaseId]: ctx.leaseId,
      [ATTR.generation]: ctx.generation,
      [ATTR.attempt]: ctx.deliveryAttempt,
      [ATTR.handler]: run.handler,
    };
    const span = this.#tracer.startSpan(spanName('process', this.#destination), { kind: SpanKind.CONSUMER, attributes, links }, parent);
    return new OtelRunTrace(this.#tracer, span, parent);
  }

  settle(sent: AckStatus): SettleTrace {
    const { pulled, workerId } = this.#lease;
    const attributes: Attributes = {
      ...this.#common(),
      [ATTR.operationType]: 'settle',
      [ATTR.operationName]: 'ack',
      [ATTR.clientId]: workerId,
      [ATTR.batchCount]: pulled.events.length,
      [ATTR.leaseId]: pulled.leaseId,
      [ATTR.generation]: pulled.generation,
      [ATTR.attempt]: pulled.attempt,
      [ATTR.ackSent]: sent,
    };
    // CLIENT: a call to the platform that waits for its answer (no row of the conventions' table).
    const span = this.#tracer.startSpan(spanName('settle', this.#destination), { kind: SpanKind.CLIENT, attributes }, this.#context);
    return new OtelSettleTrace(this.#tracer, span, this.#context);
  }

  #common(): Attributes {
    return { [ATTR.system]: MESSAGING_SYSTEM, [ATTR.destination]: this.#destination, [ATTR.consumerGroup]: this.#destination };
  }
}

export class OtelRunTracer implements RunTracer {
  readonly enabled = true;
  readonly #tracer: Tracer;
  readonly #destination: string;

  constructor(destination: string, tracer: Tracer = trace.getTracer('durable-worker')) {
    this.#destination = destination;
    this.#tracer = tracer;
  }

  received(lease: TracedLease): LeaseTrace {
    const { pulled, workerId, pulledAtMs } = lease;
    const links: Link[] = [];
    for (const event of pulled.events) {
      const creation = remoteSpanContext(eventTraceCarrier(event));
      if (creation !== undefined) links.push({ context: creation, attributes: { [ATTR.messageId]: event.id } });
    }
    const attributes: Attributes = {
      [ATTR.system]: MESSAGING_SYSTEM,
      [ATTR.destination]: this.#destination,
      [ATTR.consumerGroup]: this.#destination,
      [ATTR.operationType]: 'receive',
      [ATTR.operationName]: 'pull',
      [ATTR.clientId]: workerId,
      [ATTR.batchCount]: pulled.events.length,
      [ATTR.leaseId]: pulled.leaseId,
      [ATTR.generation]: pulled.generation,
      [ATTR.attempt]: pulled.attempt,
    };
    const span = this.#tracer.startSpan(
      spanName('receive', this.#destination),
      { kind: SpanKind.CONSUMER, startTime: pulledAtMs, attributes, links },
      ROOT_CONTEXT,
    );
    span.end();
    return new OtelLeaseTrace(this.#tracer, this.#destination, lease, span);
  }
}
