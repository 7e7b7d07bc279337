import { randomBytes } from 'node:crypto';
import type { SignInGrant } from './sign-in-grant.js';

/** RFC 6749 §4.1.2: codes must be short-lived ("a maximum lifetime of 10 minutes is RECOMMENDED"); 60 s, as docs/client.md says, is ample for a redirect. */
export const AUTHORIZATION_CODE_LIFETIME_MS = 60_000;

/** Drop expired codes once the table grows past this (they are otherwise dropped on lookup). */
const SWEEP_THRESHOLD = 1_000;

/** What an authorization request approved, bound to its code until the client redeems it. */
export interface ApprovedAuthorization {
  grant: SignInGrant;
  /** Exactly as sent: RFC 6749 §4.1.3 wants the token request's redirect_uri identical. */
  redirectUri: string;
  /** S256 code challenge (RFC 7636). */
  codeChallenge: string;
}

export type CodeLookup =
  | { kind: 'valid'; authorization: ApprovedAuthorization }
  | { kind: 'unknown' }
  | { kind: 'expired' }
  /** Redeemed before: RFC 6749 §4.1.2 says deny and revoke what the first redemption produced. */
  | { kind: 'reused'; grantId: string };

interface StoredCode {
  authorization: ApprovedAuthorization;
  expiresAtMs: number;
  redeemed: boolean;
}

/**
 * Authorization codes: opaque, single-use, short-lived. Pure state: time comes in as `nowMs`, so
 * expiry is tested without waiting. A redeemed code stays as a tombstone until it would have
 * expired, so a replay in that window is recognised as one (and revokes the grant) rather than
 * answered as an unknown code.
 */
export class AuthorizationCodes {
  private readonly codes = new Map<string, StoredCode>();

  constructor(private readonly lifetimeMs = AUTHORIZATION_CODE_LIFETIME_MS) {}

  issue(authorization: ApprovedAuthorization, nowMs: number): string {
    if (this.codes.size > SWEEP_THRESHOLD) this.sweep(nowMs);
    // The `emu_ac_` prefix (after Hydra's `ory_ac_`) lets secret scanners and humans tell what leaked.
    const code = `emu_ac_${randomBytes(32).toString('base64url')}`;
    this.codes.set(code, { authorization, expiresAtMs: nowMs + this.lifetimeMs, redeemed: false });
    return code;
  }

  lookup(code: string, nowMs: number): CodeLookup {
    const stored = this.codes.get(code);
    if (stored === undefined) return { kind: 'unknown' };
    if (stored.expiresAtMs <= nowMs) {
      this.codes.delete(code);
      return { kind: 'expired' };
    }
    if (stored.redeemed) return { kind: 'reused', grantId: stored.authorization.grant.id };
    return { kind: 'valid', authorization: stored.authorization };
  }

  /**
   * Marks a code used. Call it in the same synchronous step as the successful `lookup`, so two
   * concurrent exchanges cannot both succeed. Failed exchanges (wrong verifier, redirect_uri or
   * client) do not consume the code, as in ORY Hydra: a party without the verifier cannot burn the
   * legitimate client's code.
   */
  markRedeemed(code: string): void {
    const stored = this.codes.get(code);
    if (stored !== undefined) stored.redeemed = true;
  }

  private sweep(nowMs: number): void {
    for (const [code, stored] of this.codes) if (stored.expiresAtMs <= nowMs) this.codes.delete(code);
  }
}
