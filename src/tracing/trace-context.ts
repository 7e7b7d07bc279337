/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/) as plain strings: parsing and writing a
 * `traceparent`, with no OpenTelemetry module. The emulator's ingest, the forwarding handler and the
 * handler's log lines use it whether tracing is on or off, so it must cost nothing to load.
 */

/** The parts of a valid `traceparent`: lowercase hex ids, flags as a number (bit 0: sampled). */
export interface TraceParent {
  traceId: string;
  spanId: string;
  traceFlags: number;
}

/** What travels with an event or a job: the CloudEvents distributed tracing extension's two attributes. */
export interface TraceCarrier {
  traceparent: string;
  tracestate?: string;
}

// Version 00 is exactly this; a later version may append fields after a dash (the spec: parse the
// first four and ignore the rest), and version ff is invalid.
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE_ID = '0'.repeat(32);
const ZERO_SPAN_ID = '0'.repeat(16);

/** A valid `traceparent`, or undefined (the spec: an invalid one is ignored, as if absent). */
export function parseTraceparent(value: unknown): TraceParent | undefined {
  if (typeof value !== 'string') return undefined;
  const match = TRACEPARENT.exec(value.trim());
  if (match === null) return undefined;
  const [, version, traceId, spanId, flags, rest] = match as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (traceId === ZERO_TRACE_ID || spanId === ZERO_SPAN_ID) return undefined;
  return { traceId, spanId, traceFlags: Number.parseInt(flags, 16) };
}

export function formatTraceparent(parent: TraceParent): string {
  return `00-${parent.traceId}-${parent.spanId}-${(parent.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/**
 * `tracestate` as sent on: at most 512 characters of list members (the spec lets a vendor drop
 * entries beyond that), no control characters. Anything else is dropped rather than passed on.
 */
export function sanitizeTracestate(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  if (trimmed === '' || trimmed.length > 512 || /[^\x20-\x7e]/.test(trimmed)) return undefined;
  return trimmed;
}

/** The event's own trace context (CloudEvents distributed tracing extension), when it carries a valid one. */
export function eventTraceCarrier(event: { traceparent?: unknown; tracestate?: unknown }): TraceCarrier | undefined {
  const parent = parseTraceparent(event.traceparent);
  if (parent === undefined) return undefined;
  const tracestate = sanitizeTracestate(event.tracestate);
  return tracestate === undefined ? { traceparent: formatTraceparent(parent) } : { traceparent: formatTraceparent(parent), tracestate };
}

/** The log fields of a run: `trace_id` and `span_id`, the names OpenTelemetry's log correlation uses. */
export function traceLogFields(carrier: TraceCarrier | undefined): { trace_id: string; span_id: string; trace_flags: string } | undefined {
  const parent = carrier === undefined ? undefined : parseTraceparent(carrier.traceparent);
  if (parent === undefined) return undefined;
  return { trace_id: parent.traceId, span_id: parent.spanId, trace_flags: (parent.traceFlags & 0xff).toString(16).padStart(2, '0') };
}
