import { redactUrl } from '../runtime/redact-url.js';
import type { WorkerConfig } from './types.js';

/**
 * The configuration as the start-up log line shows it: no secret values (only which credential is
 * in use), store URLs without passwords.
 */
export function describeConfig(config: WorkerConfig): Record<string, unknown> {
  const { clientSecret: _secret, apiKey: _apiKey, idempotencyUrl, deadLetterUrl, forwardUrl, ...rest } = config;
  return {
    ...rest,
    credential: config.apiKey !== undefined ? 'api-key' : 'client-credentials',
    idempotencyUrl: redactUrl(idempotencyUrl),
    deadLetterUrl: redactUrl(deadLetterUrl),
    ...(forwardUrl !== undefined ? { forwardUrl: redactUrl(forwardUrl) } : {}),
  };
}
