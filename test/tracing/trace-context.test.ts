import { describe, expect, it } from 'vitest';
import { eventTraceCarrier, formatTraceparent, parseTraceparent, sanitizeTracestate, traceLogFields } from '../../src/tracing/trace-context.js';

const VALID = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('W3C traceparent', () => {
  it('parses a valid version-00 value and writes it back unchanged', () => {
    const parsed = parseTraceparent(VALID);
    expect(parsed).toEqual({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: 1 });
    expect(formatTraceparent(parsed!)).toBe(VALID);
  });

  it.each([
    ['uppercase hex', VALID.toUpperCase()],
    ['zero trace id', `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`],
    ['zero span id', `00-4bf92f3577b34da6a3ce929d0e0e4736-${'0'.repeat(16)}-01`],
    ['version ff', VALID.replace(/^00/, 'ff')],
    ['version 00 with extra fields', `${VALID}-extra`],
    ['short trace id', '00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01'],
    ['not a string', 42],
  ])('ignores an invalid value (%s)', (_label, value) => {
    expect(parseTraceparent(value)).toBeUndefined();
  });

  it('accepts a later version with extra fields (parsing its first four)', () => {
    expect(parseTraceparent(`01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-more`)?.traceFlags).toBe(0);
  });

  it('keeps a plain tracestate and drops one with control characters or beyond 512 characters', () => {
    expect(sanitizeTracestate('congo=t61rcWkgMzE,rojo=00f067aa0ba902b7')).toBe('congo=t61rcWkgMzE,rojo=00f067aa0ba902b7');
    expect(sanitizeTracestate('a=1\nb=2')).toBeUndefined();
    expect(sanitizeTracestate(`a=${'x'.repeat(520)}`)).toBeUndefined();
  });

  it("reads an event's distributed-tracing extension attributes and gives log fields", () => {
    expect(eventTraceCarrier({ traceparent: VALID, tracestate: 'a=1' })).toEqual({ traceparent: VALID, tracestate: 'a=1' });
    expect(eventTraceCarrier({ traceparent: 'garbage' })).toBeUndefined();
    expect(traceLogFields({ traceparent: VALID })).toEqual({ trace_id: '4bf92f3577b34da6a3ce929d0e0e4736', span_id: '00f067aa0ba902b7', trace_flags: '01' });
  });
});
