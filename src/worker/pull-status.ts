import { isRetryable } from '../client/errors.js';
import { ErrorCodes, hasCode } from '../errors.js';
import type { PullStatusLabel } from '../observability/worker-events.js';

/** A pull failure that retrying will not cure: the destination, credential or scope is wrong. */
export function configProblem(err: unknown): string | undefined {
  const status = (err as { status?: unknown }).status;
  if (hasCode(err, ErrorCodes.AUTH) && !isRetryable(err)) {
    // The worker asks for scope read:events (worker/start.ts); an application without it is refused at the issuer.
    if ((err as { issuer?: { error?: unknown } }).issuer?.error === 'invalid_scope')
      return 'the token issuer refused scope read:events: the application (--client-id) must have it';
    return 'the token issuer refused the client credentials (check --client-id, --client-secret, --tenant, --auth-url)';
  }
  if (!hasCode(err, ErrorCodes.API)) return undefined;
  switch (status) {
    case 400:
      return 'pull answered 400: the destination is not a DURABLE_CONSUMER, or a pull option is out of range (check --destination, --limit, --visibility)';
    case 401:
      return 'pull answered 401 even with a fresh credential (check --api-key or the client credentials)';
    case 403:
      return 'pull answered 403: the credential lacks the read:events scope';
    case 404:
      return 'pull answered 404: no such event destination (check --destination and --tenant)';
    default:
      return undefined;
  }
}

/** `durable_worker_pulls_total`'s status label of a pull that failed. */
export function pullStatusLabel(err: unknown): PullStatusLabel {
  const status = (err as { status?: unknown }).status;
  if (hasCode(err, ErrorCodes.API) && typeof status === 'number') return status >= 500 ? '5xx' : '4xx';
  return 'error';
}
