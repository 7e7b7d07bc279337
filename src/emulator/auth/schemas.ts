import * as z from 'zod';
import { component } from '../openapi/components.js';
import type { ParameterSpec } from '../openapi/operation.js';
import { S256_CHALLENGE } from './pkce.js';

/**
 * Wire schemas of the issuer (spec: Issue a machine access token, Token responses; the interactive
 * sign-in of Authentication rule 1). The form is read field by field under RFC 6749's rules (a
 * repeated field is `invalid_request`), each grant taking the fields it needs.
 */

const field = (description: string) => z.string().optional().meta({ description });

export const TokenRequestSchema = component(
  'TokenRequest',
  z
    .object({
      grant_type: z.enum(['client_credentials', 'authorization_code', 'refresh_token']),
      client_id: field('Client ID (or HTTP Basic). Required for every grant.'),
      client_secret: field('Client secret (or HTTP Basic). Required for client_credentials; checked when sent with the other grants.'),
      audience: field('client_credentials: the tenant ID (ingest and events), or the API version ID of a protected destination.'),
      scope: field('Space-delimited scopes. Omitted with the tenant audience: every tenant API scope enabled for the application.'),
      code: field('authorization_code: the code from `/oauth2/auth`.'),
      redirect_uri: field('authorization_code: the same redirect_uri as the authorization request.'),
      code_verifier: field('authorization_code: the PKCE verifier.'),
      refresh_token: field('refresh_token: the refresh token (rotated on use).'),
    })
    .meta({ description: '`application/x-www-form-urlencoded`; each field at most once.' }),
);

export const TokenResponseSchema = component(
  'TokenResponse',
  z.strictObject({
    access_token: z.string().min(1),
    token_type: z.literal('Bearer'),
    expires_in: z.int().min(1).meta({ description: 'Seconds.' }),
    scope: z.string().meta({ description: 'Granted scopes, space-delimited; empty for an API version audience.' }),
    refresh_token: z.string().optional().meta({ description: 'Interactive sign-in with `offline`.' }),
    id_token: z.string().optional().meta({ description: 'Interactive sign-in with `openid` (unsigned: emulator only).' }),
  }),
);

export const IssuerErrorSchema = component(
  'IssuerError',
  z
    .strictObject({ error: z.string(), error_description: z.string() })
    .meta({ description: 'The spec shows no `error` codes: the emulator uses those of RFC 6749, RFC 7636 and RFC 8707.' }),
);

const param = (description: string, example?: string): ParameterSpec => ({ schema: z.string().optional(), description, ...(example ? { example } : {}) });
/** A parameter the emulator cannot do without (an empty value counts as absent, issuer-failure.ts). */
const requiredParam = (schema: z.ZodType, description: string, example?: string): ParameterSpec => ({
  schema,
  description,
  required: true,
  ...(example ? { example } : {}),
});

/** `GET /oauth2/auth`: RFC 6749 §4.1.1 with PKCE (RFC 7636) and the spec's `audience`. */
export const AUTHORIZE_QUERY = {
  response_type: requiredParam(z.enum(['code']), '`code`.', 'code'),
  client_id: requiredParam(z.string().min(1), 'Client ID of the application.', 'dev-client'),
  redirect_uri: requiredParam(
    z.string().min(1),
    'One of the redirect URIs registered for the client, exactly (any port for `http` on `127.0.0.1` or `[::1]`).',
    'http://127.0.0.1:3000/callback',
  ),
  scope: param('Space-delimited: `openid`, `profile`, `email`, `offline` and tenant API scopes.', 'openid offline'),
  state: param('Returned unchanged.'),
  code_challenge: requiredParam(
    z.string().regex(S256_CHALLENGE),
    'BASE64URL(SHA-256(verifier)), 43 characters.',
    'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
  ),
  code_challenge_method: requiredParam(z.enum(['S256']), '`S256` (plain is refused).', 'S256'),
  audience: requiredParam(z.string().min(1), "The application's tenant ID.", 'dev-tenant'),
  nonce: param('OpenID Connect nonce, copied into the ID token.'),
} satisfies Record<string, ParameterSpec>;
