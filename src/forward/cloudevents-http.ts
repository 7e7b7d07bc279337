/**
 * CloudEvents 1.0 HTTP protocol binding: how one event becomes one HTTP request, in binary or
 * structured content mode. Pure functions, so the exact wire shape is testable without a socket.
 */
import { eventTraceCarrier, type TraceCarrier } from '../tracing/trace-context.js';
import type { CloudEvent } from '../types.js';

export type ForwardMode = 'binary' | 'structured';

/**
 * `source` is required by CloudEvents but the platform's events do not show one (spec: events carry
 * `specversion`, `id`, `type`, `subject`, `sequence`, `data`). When absent we send this URI-reference
 * so receivers that validate the envelope still accept the request.
 */
export const DEFAULT_EVENT_SOURCE = 'durable-worker';

export const BINARY_CONTENT_TYPE = 'application/json';
export const STRUCTURED_CONTENT_TYPE = 'application/cloudevents+json';

export interface ForwardRequest {
  headers: Record<string, string>;
  body: string;
}

/**
 * CloudEvents HTTP binding 3.1.3.2: header values percent-encode space, `"`, `%` and anything
 * outside printable ASCII (as UTF-8 bytes), so a subject such as an entry id with spaces or
 * non-ASCII letters survives the trip and never breaks the header syntax.
 */
export function encodeHeaderValue(value: string): string {
  let out = '';
  for (const char of value) {
    const code = char.codePointAt(0) ?? 0;
    if (code > 0x20 && code < 0x7f && char !== '"' && char !== '%') {
      out += char;
    } else {
      for (const byte of Buffer.from(char, 'utf8')) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    }
  }
  return out;
}

/** The JSON body for `data`; an absent payload is sent as JSON `null` so the body always parses. */
export function encodeData(data: unknown): string {
  return JSON.stringify(data === undefined ? null : data);
}

/** Binary mode: attributes as `ce-*` headers, `data` as the JSON body. */
export function toBinaryRequest(event: CloudEvent): ForwardRequest {
  const headers: Record<string, string> = {
    'content-type': BINARY_CONTENT_TYPE,
    'ce-specversion': event.specversion ?? '1.0',
    'ce-id': encodeHeaderValue(event.id),
    'ce-type': encodeHeaderValue(event.type),
    'ce-source': encodeHeaderValue(event.source ?? DEFAULT_EVENT_SOURCE),
    'ce-subject': encodeHeaderValue(event.subject),
    // `sequence` is not a core attribute: it travels as an extension attribute (lowercase alnum name).
    'ce-sequence': encodeHeaderValue(event.sequence),
  };
  if (event.time !== undefined) headers['ce-time'] = encodeHeaderValue(event.time);
  // Distributed tracing extension: the event's creation context, an extension attribute like any other.
  const creation = eventTraceCarrier(event);
  if (creation !== undefined) {
    headers['ce-traceparent'] = creation.traceparent;
    if (creation.tracestate !== undefined) headers['ce-tracestate'] = encodeHeaderValue(creation.tracestate);
  }
  return { headers, body: encodeData(event.data) };
}

/** Structured mode: the whole event as one `application/cloudevents+json` document. */
export function toStructuredRequest(event: CloudEvent): ForwardRequest {
  const envelope: Record<string, unknown> = {
    specversion: event.specversion ?? '1.0',
    id: event.id,
    type: event.type,
    source: event.source ?? DEFAULT_EVENT_SOURCE,
    subject: event.subject,
    sequence: event.sequence,
    datacontenttype: BINARY_CONTENT_TYPE,
  };
  if (event.time !== undefined) envelope.time = event.time;
  const creation = eventTraceCarrier(event);
  if (creation !== undefined) Object.assign(envelope, creation);
  envelope.data = event.data === undefined ? null : event.data;
  return { headers: { 'content-type': STRUCTURED_CONTENT_TYPE }, body: JSON.stringify(envelope) };
}

/**
 * The request's own W3C Trace Context headers, in both modes: the context the request is sent in (the
 * handler run's process span with tracing on), else the event's creation context, so the app's HTTP
 * instrumentation joins the trace either way. The CloudEvents distributed tracing extension says its
 * attributes do not replace the transport's trace headers: the app gets both (the creation context
 * in `ce-traceparent` or the envelope, the request's in `traceparent`).
 */
export function withTraceHeaders(request: ForwardRequest, event: CloudEvent, active: TraceCarrier | undefined): ForwardRequest {
  const context = active ?? eventTraceCarrier(event);
  if (context === undefined) return request;
  request.headers.traceparent = context.traceparent;
  if (context.tracestate !== undefined) request.headers.tracestate = context.tracestate;
  return request;
}

export function toForwardRequest(event: CloudEvent, mode: ForwardMode, active?: TraceCarrier): ForwardRequest {
  return withTraceHeaders(mode === 'structured' ? toStructuredRequest(event) : toBinaryRequest(event), event, active);
}
