import { setTimeout as sleepMs } from 'node:timers/promises';
import { AuthError, isAbortError, retryAfterMs } from '../errors.js';
import { exchange, joinUrl, parseJsonText } from '../http.js';
import type { HttpDispatcher } from '../lazy-undici.js';
import { SingleFlightToken, type RefreshableToken } from '../token-cache.js';
import { pathOf } from '../transport.js';
import type { AppliedCredential, Credential } from '../token-provider.js';

export interface DestinationTokenOptions {
  /** Base of the destination token service (`{destinations_url}`). */
  destinationsUrl: string;
  /** `{destination_id}` of `POST /destinations/{destination_id}/token`. */
  destinationId: string;
  clientId: string;
  /** The secret of the registered application, or a function read at each token request. */
  clientSecret: string | (() => string | Promise<string>);
  dispatcher: HttpDispatcher;
  userAgent?: string | undefined;
  /** Deadline of one token request, ms. Default 10_000. */
  requestTimeoutMs?: number | undefined;
  /**
   * Longest `Retry-After` of a 429 the provider sleeps through inside one call, ms; a longer one
   * fails at once with AuthError 429 carrying `retryAfterMs`. Default 60_000.
   */
  maxRetryAfterMs?: number | undefined;
  /** Clock, injected for tests. Default `Date.now`. */
  now?: () => number;
  /** Sleep, injected for tests; must reject when `signal` aborts. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/**
 * When to stop using a destination token that lives `expiresInSeconds`, in ms after obtaining it:
 * one minute before expiry (a tenth of the life for lives under ten minutes), so a request in
 * flight never carries a token that expires on the way. Spec: "clients should rely on the returned
 * value and reuse the token until it expires" — with a budget of 100 requests per hour per
 * application, refreshing earlier would spend it for nothing.
 */
export function destinationTokenRefreshAfterMs(expiresInSeconds: number): number {
  const lifeMs = Math.max(0, expiresInSeconds * 1000);
  return lifeMs - Math.min(60_000, lifeMs / 10);
}

/**
 * Destination tokens (spec: Issue a destination token): `POST {destinations_url}/destinations/{id}/token`
 * with `{clientId, clientSecret}` -> `{accessToken, expiresIn}`. Cached until just before expiry;
 * concurrent callers share one request (single flight); a 429 is honoured: short `Retry-After`s are
 * slept through, a long one fails fast and every call until it passes fails without a request.
 */
export class DestinationTokenProvider implements Credential {
  readonly #options: DestinationTokenOptions;
  readonly #now: () => number;
  readonly #url: URL;
  readonly #cache: SingleFlightToken<RefreshableToken>;
  #blocked: { untilMs: number; error: AuthError } | undefined;
  #requests = 0;

  constructor(options: DestinationTokenOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#cache = new SingleFlightToken(() => this.#fetchWithRetry(), this.#now);
    this.#url = joinUrl(options.destinationsUrl, pathOf`/destinations/${options.destinationId}/token`);
  }

  /** Token requests sent so far (tests and diagnostics; never the token). */
  get requestCount(): number {
    return this.#requests;
  }

  async getToken(signal?: AbortSignal): Promise<string> {
    signal?.throwIfAborted();
    // A spent budget (long 429) fails fast without a request until Retry-After has passed.
    if (!this.#cache.fresh() && this.#blocked && this.#now() < this.#blocked.untilMs) throw this.#blocked.error;
    return this.#cache.get(signal);
  }

  async apply(signal?: AbortSignal): Promise<AppliedCredential> {
    return { header: 'authorization', value: `Bearer ${await this.getToken(signal)}`, refreshable: true };
  }

  /** A 401 from the destination: forget that token (if still cached) so the next call fetches one. */
  invalidate(applied: AppliedCredential): void {
    if (applied.value.startsWith('Bearer ')) this.#cache.invalidate(applied.value.slice('Bearer '.length));
  }

  async #fetchWithRetry(): Promise<RefreshableToken> {
    const maxWaitMs = this.#options.maxRetryAfterMs ?? 60_000;
    const sleep = this.#options.sleep ?? ((ms: number) => sleepMs(ms));
    // A few 429s in a row are plausible right at the edge of the hourly window; more means the
    // budget is really spent and waiting is the caller's decision.
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#fetchOnce();
      } catch (err) {
        if (isAbortError(err) || !(err instanceof AuthError) || err.status !== 429) throw err;
        const waitMs = err.retryAfterMs ?? 1000;
        if (waitMs > maxWaitMs || attempt >= 3) {
          this.#blocked = { untilMs: this.#now() + waitMs, error: err };
          throw err;
        }
        await sleep(waitMs);
      }
    }
  }

  async #fetchOnce(): Promise<RefreshableToken> {
    const secretSource = this.#options.clientSecret;
    const secret = typeof secretSource === 'function' ? await secretSource() : secretSource;
    if (typeof secret !== 'string' || secret === '') throw new AuthError({ status: 0, message: 'destination client secret is empty' });
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (this.#options.userAgent) headers['user-agent'] = this.#options.userAgent;
    this.#requests++;
    const response = await exchange(this.#options.dispatcher, {
      url: this.#url,
      method: 'POST',
      headers,
      body: JSON.stringify({ clientId: this.#options.clientId, clientSecret: secret }),
      timeoutMs: this.#options.requestTimeoutMs ?? 10_000,
    });
    let body: unknown;
    try {
      body = parseJsonText(response.text);
    } catch {
      body = undefined;
    }
    const record = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
    if (response.status < 200 || response.status > 299) {
      // The body is a problem document; its detail never echoes the secret in our emulator, but a
      // foreign server might: only the status and the title/detail with the secret scrubbed are kept.
      const detail = [record.title, record.detail].filter((part) => typeof part === 'string' && part !== '').join(' - ');
      throw new AuthError({
        status: response.status,
        retryAfterMs: retryAfterMs(response.headers),
        message: `destination token request to ${this.#url.pathname} refused (${response.status})${detail ? `: ${detail.split(secret).join('***').slice(0, 300)}` : ''}`,
      });
    }
    const token = record.accessToken;
    const expiresIn = Number(record.expiresIn);
    if (typeof token !== 'string' || token === '')
      throw new AuthError({ status: response.status, message: 'destination token response carries no accessToken' });
    if (!Number.isFinite(expiresIn) || expiresIn <= 0)
      throw new AuthError({ status: response.status, message: 'destination token response has no positive expiresIn' });
    this.#blocked = undefined;
    return { token, refreshAtMs: this.#now() + destinationTokenRefreshAfterMs(expiresIn) };
  }
}
