import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/errors.js';
import { ApiError, AuthError, IngestValidationError, NetworkError, isRetryable, retryAfterMs } from '../../src/client/errors.js';

describe('isRetryable', () => {
  const api = (status: number) => new ApiError({ status, method: 'GET', path: '/v1/x' });

  it.each([429, 408, 500, 502, 503, 504, 599])('retries ApiError %i', (status) => {
    expect(isRetryable(api(status))).toBe(true);
  });

  it.each([400, 401, 403, 404, 409, 413, 422])('does not retry ApiError %i', (status) => {
    expect(isRetryable(api(status))).toBe(false);
  });

  it('retries network errors and issuer 5xx/429, not issuer 4xx', () => {
    expect(isRetryable(new NetworkError({ method: 'GET', path: '/x', cause: new Error('ECONNRESET') }))).toBe(true);
    expect(isRetryable(new AuthError({ status: 503, message: 'down' }))).toBe(true);
    expect(isRetryable(new AuthError({ status: 429, message: 'slow down' }))).toBe(true);
    expect(isRetryable(new AuthError({ status: 401, message: 'invalid_client' }))).toBe(false);
  });

  it('does not retry aborts, validation errors or unknown errors', () => {
    const aborted = new AbortController();
    aborted.abort();
    expect(isRetryable(aborted.signal.reason)).toBe(false);
    expect(isRetryable(new IngestValidationError({ 'entries[0].id': ['required'] }))).toBe(false);
    expect(isRetryable(new Error('boom'))).toBe(false);
    expect(isRetryable(undefined)).toBe(false);
  });

  it('decides on code and status, so errors that crossed a thread still classify', () => {
    const cloned = structuredClone({ ...api(503), code: ErrorCodes.API, status: 503 });
    expect(isRetryable(cloned)).toBe(true);
    expect(isRetryable({ code: ErrorCodes.NETWORK })).toBe(true);
    expect(isRetryable({ code: ErrorCodes.API, status: 404 })).toBe(false);
  });
});

describe('retryAfterMs', () => {
  it('reads integer seconds', () => {
    expect(retryAfterMs({ 'retry-after': '3' })).toBe(3000);
    expect(retryAfterMs(new Headers({ 'Retry-After': '7' }))).toBe(7000);
  });

  it('clamps to the spec minimum of 1 second', () => {
    expect(retryAfterMs({ 'retry-after': '0' })).toBe(1000);
    expect(retryAfterMs({ 'retry-after': '0.2' })).toBe(1000);
  });

  it('accepts an HTTP-date relative to now, and a past date as the minimum', () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(retryAfterMs({ 'retry-after': 'Wed, 01 Jan 2025 00:00:30 GMT' }, now)).toBe(30_000);
    expect(retryAfterMs({ 'retry-after': 'Tue, 31 Dec 2024 23:00:00 GMT' }, now)).toBe(1000);
  });

  it('is undefined when absent or unreadable', () => {
    expect(retryAfterMs({})).toBeUndefined();
    expect(retryAfterMs(undefined)).toBeUndefined();
    expect(retryAfterMs({ 'retry-after': 'soon' })).toBeUndefined();
    expect(retryAfterMs({ 'retry-after': '-5' })).toBeUndefined();
  });

  it('takes the first of repeated headers, any case', () => {
    expect(retryAfterMs({ 'Retry-After': ['2', '9'] })).toBe(2000);
  });
});

describe('error shapes', () => {
  it('ApiError names method, path, status and the problem, with a stable code', () => {
    const err = new ApiError({
      status: 400,
      method: 'POST',
      path: '/sources/s1',
      problem: { type: 'about:blank', title: 'Bad Request', status: 400, detail: 'entries is empty', instance: '', traceId: 't' },
    });
    expect(err.code).toBe('DW_ERR_API');
    expect(err.message).toBe('POST /sources/s1 answered 400: Bad Request - entries is empty');
    expect(JSON.parse(JSON.stringify(err))).toMatchObject({ code: 'DW_ERR_API', status: 400, method: 'POST', path: '/sources/s1' });
  });

  it('IngestValidationError keeps errors keyed by path and summarises the first', () => {
    const err = new IngestValidationError({ 'entries[0].properties[1].value': ['must be a string'], entries: ['x'] });
    expect(err.code).toBe('DW_ERR_INGEST_VALIDATION');
    expect(err.errors['entries[0].properties[1].value']).toEqual(['must be a string']);
    expect(err.message).toContain('2 paths');
    expect(err.message).toContain('entries[0].properties[1].value: must be a string');
  });

  it('NetworkError keeps its cause and says what failed', () => {
    const cause = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    const err = new NetworkError({ method: 'POST', path: '/v1/event-destinations/d/pull', cause });
    expect(err.cause).toBe(cause);
    expect(err.code).toBe('DW_ERR_NETWORK');
    expect(err.message).toContain('ECONNREFUSED');
  });
});
