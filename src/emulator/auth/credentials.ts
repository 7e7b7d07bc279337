import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { ALL_SCOPES, type ApplicationConfig } from '../config.js';
import type { Principal } from '../context.js';
import { HttpProblem } from '../http/problem.js';
import { bearerJwt, TOKEN_ISSUER } from './jwt.js';

/** A registered application (client credentials). */
export interface Application {
  tenant: string;
  clientId: string;
  clientSecret: string;
  scopes: ReadonlySet<string>;
  sources: 'all' | ReadonlySet<string>;
  dataProvider: boolean;
  /** Registered redirect URIs of the interactive sign-in (auth/redirect-uris.ts). */
  redirectUris: readonly string[];
}

interface IssuedToken {
  principal: Principal;
  expiresAtMs: number;
  /** The interactive sign-in the token belongs to, so the whole grant can be revoked at once. */
  grantId?: string;
}

/** The signed-in user behind an access token of the interactive sign-in. */
export interface SignedInUser {
  /** `sub` of the token. */
  subject: string;
  /** Revocation handle of the sign-in (see `revokeGrant`). */
  grantId: string;
}

export interface IssuedAccessToken {
  accessToken: string;
  expiresInSeconds: number;
  scope: string;
}

/** Sweep expired tokens once the table grows past this (tokens are otherwise dropped on lookup). */
const TOKEN_SWEEP_THRESHOLD = 10_000;

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

function unauthorized(detail: string, challenge = 'Bearer'): HttpProblem {
  return new HttpProblem(401, detail, undefined, { 'www-authenticate': challenge });
}

/**
 * Applications, organization API keys and issued access tokens.
 *
 * Decision (spec shows "JWT" without a signing scheme): tokens are JWT-shaped but unsigned
 * (`alg: none`) with a random third segment; the server only trusts its own table, so a decoded
 * or forged token grants nothing. Tools can still decode `aud`, `scope` and `exp`.
 */
export class Credentials {
  private readonly applications = new Map<string, Application>();
  private readonly apiKeys = new Map<string, Principal>();
  private readonly tokens = new Map<string, IssuedToken>();
  /** Issuer tokens whose audience is a destination API version ID: they open that destination only. */
  private readonly apiVersionTokens = new Map<string, { apiVersionId: string; expiresAtMs: number }>();

  constructor(readonly tokenLifetimeSeconds: number) {}

  addApplication(config: ApplicationConfig): Application {
    const application: Application = {
      tenant: config.tenant,
      clientId: config.clientId,
      clientSecret: config.clientSecret,
      scopes: new Set(config.scopes),
      sources: config.sources === 'all' ? 'all' : new Set(config.sources),
      dataProvider: config.dataProvider,
      redirectUris: [...config.redirectUris],
    };
    this.applications.set(config.clientId, application);
    return application;
  }

  hasApplication(clientId: string): boolean {
    return this.applications.has(clientId);
  }

  /** The application without client authentication: for public clients of the interactive sign-in. */
  findApplication(clientId: string): Application | undefined {
    return this.applications.get(clientId);
  }

  /** Spec, Authentication: "An organization API key holds every tenant scope" (and every source). */
  addApiKey(tenant: string, apiKey: string): void {
    this.apiKeys.set(apiKey, Object.freeze({ kind: 'api-key', tenant, scopes: new Set(ALL_SCOPES), sources: 'all', dataProvider: false }));
  }

  /** The application when the secret matches (constant-time compare), else undefined. */
  verifyClient(clientId: string, clientSecret: string): Application | undefined {
    const application = this.applications.get(clientId);
    if (application === undefined) return undefined;
    return sameSecret(clientSecret, application.clientSecret) ? application : undefined;
  }

  issueToken(application: Application, scopes: readonly string[], nowMs = Date.now()): IssuedAccessToken {
    const scope = scopes.join(' ');
    const accessToken = this.mintJwt(application.clientId, application.tenant, scope, nowMs);
    return this.remember(accessToken, application, scopes, scope, nowMs);
  }

  /**
   * An access token of the interactive sign-in. The API sees exactly an application token of the
   * application's tenant holding `tenantScopes` (same sources, same data-provider flag): the user
   * acts within the tenant as far as the application allows. `grantedScope` (identity scopes such
   * as `openid` included) is only reported in the token's `scope` claim and the token response.
   */
  issueUserToken(application: Application, tenantScopes: readonly string[], grantedScope: string, user: SignedInUser, nowMs = Date.now()): IssuedAccessToken {
    const accessToken = this.mintJwt(user.subject, application.tenant, grantedScope, nowMs, { client_id: application.clientId });
    return this.remember(accessToken, application, tenantScopes, grantedScope, nowMs, user.grantId);
  }

  /** Revokes every access token of an interactive sign-in (RFC 6749 §4.1.2 and §10.4: code or refresh token replayed). */
  revokeGrant(grantId: string): void {
    for (const [token, issued] of this.tokens) if (issued.grantId === grantId) this.tokens.delete(token);
  }

  private remember(
    accessToken: string,
    application: Application,
    scopes: readonly string[],
    scope: string,
    nowMs: number,
    grantId?: string,
  ): IssuedAccessToken {
    if (this.tokens.size > TOKEN_SWEEP_THRESHOLD) this.sweep(nowMs);
    const principal: Principal = Object.freeze({
      kind: 'application',
      tenant: application.tenant,
      clientId: application.clientId,
      scopes: new Set(scopes),
      sources: application.sources,
      dataProvider: application.dataProvider,
    });
    const expiresAtMs = nowMs + this.tokenLifetimeSeconds * 1000;
    this.tokens.set(accessToken, grantId === undefined ? { principal, expiresAtMs } : { principal, expiresAtMs, grantId });
    return { accessToken, expiresInSeconds: this.tokenLifetimeSeconds, scope };
  }

  /**
   * Spec, issuer audience table: "Protected destination API version | API version ID | leave empty".
   * Such a token carries no tenant scope: it is not accepted by the tenant API, only by
   * `isApiVersionToken` for its own destination.
   */
  issueApiVersionToken(application: Application, apiVersionId: string, nowMs = Date.now()): IssuedAccessToken {
    if (this.apiVersionTokens.size > TOKEN_SWEEP_THRESHOLD) this.sweep(nowMs);
    const accessToken = this.mintJwt(application.clientId, apiVersionId, '', nowMs);
    this.apiVersionTokens.set(accessToken, { apiVersionId, expiresAtMs: nowMs + this.tokenLifetimeSeconds * 1000 });
    return { accessToken, expiresInSeconds: this.tokenLifetimeSeconds, scope: '' };
  }

  /** True for an unexpired issuer token minted for exactly this API version ID. */
  isApiVersionToken(token: string, apiVersionId: string, nowMs = Date.now()): boolean {
    const issued = this.apiVersionTokens.get(token);
    return issued !== undefined && issued.apiVersionId === apiVersionId && issued.expiresAtMs > nowMs;
  }

  private mintJwt(subject: string, audience: string, scope: string, nowMs: number, extraClaims: Record<string, string> = {}): string {
    const issuedAtSeconds = Math.floor(nowMs / 1000);
    return bearerJwt({
      iss: TOKEN_ISSUER,
      sub: subject,
      aud: audience,
      scope,
      iat: issuedAtSeconds,
      exp: issuedAtSeconds + this.tokenLifetimeSeconds,
      ...extraClaims,
    });
  }

  /**
   * EmulatorContext.authenticate: Bearer token first, else `x-api-key`. 401 (with
   * `WWW-Authenticate: Bearer`) without a valid credential; 403 when none of `anyOfScopes` is held.
   */
  authenticate(req: IncomingMessage, anyOfScopes: readonly string[], nowMs = Date.now()): Principal {
    const principal = this.principalOf(req, nowMs);
    if (anyOfScopes.length > 0 && !anyOfScopes.some((scope) => principal.scopes.has(scope))) {
      const wanted = anyOfScopes.join(' ');
      throw new HttpProblem(403, `The credential lacks the required scope (${wanted}).`, undefined, {
        'www-authenticate': `Bearer error="insufficient_scope", scope="${wanted}"`,
      });
    }
    return principal;
  }

  private principalOf(req: IncomingMessage, nowMs: number): Principal {
    const authorization = req.headers.authorization;
    if (authorization !== undefined) {
      const match = /^Bearer[ ]+(\S+)\s*$/i.exec(authorization);
      if (match === null) throw unauthorized('The Authorization header must be "Bearer <token>".');
      const token = match[1]!;
      const issued = this.tokens.get(token);
      if (issued === undefined) throw unauthorized('The access token is not valid.', 'Bearer error="invalid_token"');
      if (issued.expiresAtMs <= nowMs) {
        this.tokens.delete(token);
        throw unauthorized('The access token expired.', 'Bearer error="invalid_token", error_description="The access token expired"');
      }
      return issued.principal;
    }
    const apiKey = req.headers['x-api-key'];
    if (typeof apiKey === 'string' && apiKey !== '') {
      const principal = this.apiKeys.get(apiKey);
      if (principal === undefined) throw unauthorized('The API key is not valid.');
      return principal;
    }
    throw unauthorized('A credential is required: Authorization: Bearer <token> or x-api-key.');
  }

  private sweep(nowMs: number): void {
    for (const [token, issued] of this.tokens) if (issued.expiresAtMs <= nowMs) this.tokens.delete(token);
    for (const [token, issued] of this.apiVersionTokens) if (issued.expiresAtMs <= nowMs) this.apiVersionTokens.delete(token);
  }
}
