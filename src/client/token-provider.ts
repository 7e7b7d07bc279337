import type { IssuerError } from '../types.js';
import { AuthError, retryAfterMs } from './errors.js';
import { exchange, joinUrl, parseJsonText } from './http.js';
import type { HttpDispatcher } from './lazy-undici.js';
import { SingleFlightToken } from './token-cache.js';

/**
 * Credentials of the public API (spec, Authentication 1): a machine bearer token from the issuer,
 * or an organization API key in `x-api-key`. The transport sees only this interface.
 */
export interface Credential {
  /** The header to send; `refreshable` tells whether a 401 is worth one refresh and retry. */
  apply(signal?: AbortSignal): Promise<AppliedCredential>;
  /** Forget the credential a 401 refused, so the next `apply` fetches a new one. */
  invalidate(applied: AppliedCredential): void;
}

export interface AppliedCredential {
  header: 'authorization' | 'x-api-key';
  value: string;
  refreshable: boolean;
}

/** An organization API key: sent as is, never refreshed (a 401 is final). */
export function apiKeyCredential(apiKey: string): Credential {
  const applied: AppliedCredential = Object.freeze({ header: 'x-api-key', value: apiKey, refreshable: false });
  return {
    apply: async () => applied,
    invalidate: () => undefined,
  };
}

export interface ClientCredentialsOptions {
  /** Issuer base; the token is at `{authUrl}/oauth2/token` (spec: Issue a machine access token). */
  authUrl: string;
  clientId: string;
  /** The secret, or a function read at every token request (so a rotated secret file is picked up). */
  clientSecret: string | (() => string | Promise<string>);
  /** Tenant ID (spec: audience is the tenant ID for ingest and events). */
  audience: string;
  /** Space-delimited scopes; omitted means every tenant scope enabled for the application. */
  scope?: string | undefined;
  dispatcher: HttpDispatcher;
  userAgent?: string | undefined;
  /** Deadline of one token request, in ms. Default 10_000. */
  requestTimeoutMs?: number | undefined;
  /** Clock, injected for tests. Default `Date.now`. */
  now?: () => number;
}

interface CachedToken {
  token: string;
  obtainedAtMs: number;
  refreshAtMs: number;
  expiresAtMs: number;
}

/**
 * When to refresh a token that lives `expiresInSeconds`, in ms after obtaining it: at 80 % of its
 * life or 60 s before expiry, whichever is sooner, so a slow issuer never leaves us holding an
 * expired token. For short lives (60 s before expiry would be at or before half-life) we refresh at
 * half-life instead, so a 60 s token is not refetched on every call.
 */
export function refreshAfterMs(expiresInSeconds: number): number {
  const lifeMs = Math.max(0, expiresInSeconds * 1000);
  return Math.max(lifeMs / 2, Math.min(lifeMs * 0.8, lifeMs - 60_000));
}

/**
 * OAuth 2.0 client-credentials tokens with a cache, refresh before expiry and single flight:
 * concurrent callers share one in-flight token request. That request runs on its own deadline,
 * not on any caller's signal (one caller giving up must not fail the others); each caller's signal
 * only stops its own wait.
 */
export class ClientCredentialsTokenProvider implements Credential {
  readonly #options: ClientCredentialsOptions;
  readonly #now: () => number;
  readonly #tokenUrl: URL;
  readonly #cache: SingleFlightToken<CachedToken>;
  #requests = 0;

  constructor(options: ClientCredentialsOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#cache = new SingleFlightToken(() => this.#fetchToken(), this.#now);
    this.#tokenUrl = joinUrl(options.authUrl, '/oauth2/token');
  }

  /** Token requests sent so far (for tests and diagnostics; never the token itself). */
  get requestCount(): number {
    return this.#requests;
  }

  /** A valid bearer token: the cached one until its refresh point, else a fresh one (shared). */
  async getToken(signal?: AbortSignal): Promise<string> {
    return this.#cache.get(signal);
  }

  /** Drops `token` if it is still the cached one; a token already replaced is left alone. */
  invalidateToken(token: string): void {
    this.#cache.invalidate(token);
  }

  async apply(signal?: AbortSignal): Promise<AppliedCredential> {
    return { header: 'authorization', value: `Bearer ${await this.getToken(signal)}`, refreshable: true };
  }

  invalidate(applied: AppliedCredential): void {
    if (applied.header === 'authorization') this.invalidateToken(applied.value.replace(/^Bearer /, ''));
  }

  async #fetchToken(): Promise<CachedToken> {
    const secret = await this.#readSecret();
    const form = new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: this.#options.clientId,
      client_secret: secret,
      audience: this.#options.audience,
    });
    if (this.#options.scope) form.set('scope', this.#options.scope);
    const headers: Record<string, string> = {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    };
    if (this.#options.userAgent) headers['user-agent'] = this.#options.userAgent;
    this.#requests++;
    const response = await exchange(this.#options.dispatcher, {
      url: this.#tokenUrl,
      method: 'POST',
      headers,
      body: form.toString(),
      timeoutMs: this.#options.requestTimeoutMs ?? 10_000,
    });
    const body = safeParse(response.text);
    if (response.status < 200 || response.status > 299) {
      const issuer = readIssuerError(body, secret);
      const reason = issuer ? `${issuer.error}${issuer.error_description ? ` - ${issuer.error_description}` : ''}` : 'no issuer error body';
      throw new AuthError({
        status: response.status,
        issuer,
        retryAfterMs: retryAfterMs(response.headers),
        message: `token request to ${this.#tokenUrl.pathname} refused (${response.status}): ${reason}`,
      });
    }
    return this.#readToken(body, response.status);
  }

  #readToken(body: unknown, status: number): CachedToken {
    const record = isRecord(body) ? body : {};
    const token = record.access_token;
    // Liberal: expires_in as a numeric string is accepted; a missing one is treated as 5 minutes.
    const expiresIn = Number(record.expires_in ?? 300);
    const tokenType = record.token_type;
    if (typeof token !== 'string' || token === '') {
      throw new AuthError({ status, message: 'token response carries no access_token' });
    }
    if (tokenType !== undefined && String(tokenType).toLowerCase() !== 'bearer') {
      throw new AuthError({ status, message: `token response has token_type ${JSON.stringify(String(tokenType).slice(0, 40))}, expected Bearer` });
    }
    if (!Number.isFinite(expiresIn) || expiresIn <= 0) {
      throw new AuthError({ status, message: 'token response has no positive expires_in' });
    }
    const obtainedAtMs = this.#now();
    return {
      token,
      obtainedAtMs,
      refreshAtMs: obtainedAtMs + refreshAfterMs(expiresIn),
      expiresAtMs: obtainedAtMs + expiresIn * 1000,
    };
  }

  async #readSecret(): Promise<string> {
    const source = this.#options.clientSecret;
    const secret = typeof source === 'function' ? await source() : source;
    if (typeof secret !== 'string' || secret === '') {
      throw new AuthError({ status: 0, message: 'client secret is empty' });
    }
    return secret;
  }
}

function readIssuerError(body: unknown, secret: string): IssuerError | undefined {
  if (!isRecord(body) || typeof body.error !== 'string') return undefined;
  const description = typeof body.error_description === 'string' ? body.error_description : '';
  // An issuer echoing the secret back must not carry it into our error (spec, Authentication 7).
  return { error: scrub(body.error, secret), error_description: scrub(description, secret) };
}

function scrub(text: string, secret: string): string {
  return secret === '' ? text : text.split(secret).join('***');
}

function safeParse(text: string): unknown {
  try {
    return parseJsonText(text);
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
