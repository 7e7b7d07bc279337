import { randomBytes } from 'node:crypto';
import type { ProblemDetails } from '../../types.js';

/** W3C trace id: 32 lowercase hex characters. */
export function newTraceId(): string {
  return randomBytes(16).toString('hex');
}

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  503: 'Service Unavailable',
};

/**
 * An error a route throws to answer with problem details. `errors` (validation problems only)
 * maps request paths to messages, as the spec requires.
 */
export class HttpProblem extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly errors?: Record<string, string[]>,
    readonly headers?: Record<string, string>,
  ) {
    super(detail);
    this.name = 'HttpProblem';
  }
}

/** A validation problem (400) with messages keyed by request path. */
export function validationProblem(errors: Record<string, string[]>, detail = 'One or more validation errors occurred.'): HttpProblem {
  return new HttpProblem(400, detail, errors);
}

export function problemBody(status: number, detail: string, instance: string, errors?: Record<string, string[]>): ProblemDetails {
  const body: ProblemDetails = {
    // Spec: type/title values are not shown; we use the RFC 9110 section of the status as type.
    type: `https://www.rfc-editor.org/rfc/rfc9110#status.${status}`,
    title: TITLES[status] ?? (status >= 500 ? 'Server Error' : 'Client Error'),
    status,
    detail,
    instance,
    traceId: newTraceId(),
  };
  if (errors) body.errors = errors;
  return body;
}
