import type { IncomingMessage } from 'node:http';
import type { Application, Credentials } from './credentials.js';
import { IssuerFailure, singleParam } from './issuer-failure.js';

/** One answer for an unknown client and a wrong secret, so client ids cannot be probed. */
const CLIENT_AUTHENTICATION_FAILED = (): IssuerFailure => new IssuerFailure(401, 'invalid_client', 'Client authentication failed.');

/** RFC 6749 §2.3.1: client credentials may come in HTTP Basic instead of the form. */
function basicCredentials(req: IncomingMessage): { clientId: string; clientSecret: string } | undefined {
  const header = req.headers.authorization;
  if (header === undefined) return undefined;
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (match === null) throw new IssuerFailure(400, 'invalid_request', 'Only Basic client authentication is accepted in the Authorization header.');
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw new IssuerFailure(400, 'invalid_request', 'Malformed Basic credentials.');
  return { clientId: formDecode(decoded.slice(0, colon)), clientSecret: formDecode(decoded.slice(colon + 1)) };
}

function formDecode(value: string): string {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    throw new IssuerFailure(400, 'invalid_request', 'Malformed Basic credentials.');
  }
}

/** The client id and the secret if one was sent, from HTTP Basic or the form (one method, not both). */
function presentedClient(req: IncomingMessage, form: URLSearchParams, secretRequired: boolean): { clientId: string; clientSecret: string | undefined } {
  const basic = basicCredentials(req);
  const formId = singleParam(form, 'client_id', basic === undefined);
  const formSecret = singleParam(form, 'client_secret', basic === undefined && secretRequired);
  if (basic !== undefined && formSecret !== undefined) {
    throw new IssuerFailure(400, 'invalid_request', 'Use one client authentication method, not both.');
  }
  return { clientId: basic?.clientId ?? formId!, clientSecret: basic?.clientSecret ?? formSecret };
}

/** A confidential client (client_credentials grant): the secret is required and must match. */
export function authenticateConfidentialClient(req: IncomingMessage, form: URLSearchParams, credentials: Credentials): Application {
  const { clientId, clientSecret } = presentedClient(req, form, true);
  const application = credentials.verifyClient(clientId, clientSecret!);
  if (application === undefined) throw CLIENT_AUTHENTICATION_FAILED();
  return application;
}

/**
 * A public client (authorization_code and refresh_token grants): the interactive sign-in runs in
 * browsers and native apps that cannot keep a secret (spec, Authentication rule 7), so PKCE stands
 * in for it. A secret that is sent anyway must still be the right one.
 */
export function identifyPublicClient(req: IncomingMessage, form: URLSearchParams, credentials: Credentials): Application {
  const { clientId, clientSecret } = presentedClient(req, form, false);
  const application = clientSecret === undefined ? credentials.findApplication(clientId) : credentials.verifyClient(clientId, clientSecret);
  if (application === undefined) throw CLIENT_AUTHENTICATION_FAILED();
  return application;
}
