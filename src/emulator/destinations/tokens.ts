import { randomBytes } from 'node:crypto';
import { HttpProblem } from '../http/problem.js';

/** Spec: the destination token is valid for 24 hours from creation. */
export const DESTINATION_TOKEN_SECONDS = 24 * 60 * 60;
/** Spec Limits: 100 destination token requests per hour per application. */
export const TOKEN_REQUESTS_PER_HOUR = 100;
const HOUR_MS = 60 * 60 * 1000;

interface IssuedToken {
  apiVersionId: string;
  expiresAtMs: number;
}

/**
 * Destination tokens: opaque, bound to one destination (API version) and kept in memory; a
 * sliding one-hour window of requests per application (client id).
 */
export class DestinationTokens {
  readonly #tokens = new Map<string, IssuedToken>();
  readonly #requestsByClient = new Map<string, number[]>();

  constructor(private readonly nowMs: () => number) {}

  /**
   * Counts one request of `clientId`; throws 429 with `Retry-After` (seconds until the oldest
   * request of the window leaves it, at least 1) when 100 already happened within the hour.
   */
  admit(clientId: string): void {
    const now = this.nowMs();
    const recent = (this.#requestsByClient.get(clientId) ?? []).filter((at) => at > now - HOUR_MS);
    if (recent.length >= TOKEN_REQUESTS_PER_HOUR) {
      this.#requestsByClient.set(clientId, recent);
      const retryAfterSeconds = Math.max(1, Math.ceil((recent[0]! + HOUR_MS - now) / 1000));
      throw new HttpProblem(429, `More than ${TOKEN_REQUESTS_PER_HOUR} destination token requests within an hour.`, undefined, {
        'retry-after': String(retryAfterSeconds),
      });
    }
    recent.push(now);
    this.#requestsByClient.set(clientId, recent);
  }

  issue(apiVersionId: string): { accessToken: string; expiresIn: number } {
    this.#sweep();
    const accessToken = `dst_${randomBytes(32).toString('base64url')}`;
    this.#tokens.set(accessToken, { apiVersionId, expiresAtMs: this.nowMs() + DESTINATION_TOKEN_SECONDS * 1000 });
    return { accessToken, expiresIn: DESTINATION_TOKEN_SECONDS };
  }

  /** True when the token was issued for this destination and has not expired. */
  isValid(token: string, apiVersionId: string): boolean {
    const issued = this.#tokens.get(token);
    return issued !== undefined && issued.apiVersionId === apiVersionId && issued.expiresAtMs > this.nowMs();
  }

  #sweep(): void {
    const now = this.nowMs();
    for (const [token, issued] of this.#tokens) if (issued.expiresAtMs <= now) this.#tokens.delete(token);
  }
}
