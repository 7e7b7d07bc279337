import { randomBytes } from 'node:crypto';
import type { SignInGrant } from './sign-in-grant.js';

/** Used refresh tokens remembered for replay detection; the oldest are forgotten past this. */
const RETIRED_LIMIT = 10_000;

export type RefreshLookup =
  | { kind: 'active'; grant: SignInGrant }
  | { kind: 'unknown' }
  /** Issued to another client: refused without rotating (RFC 6749 §6). */
  | { kind: 'wrong-client' }
  /** Used before: a stolen copy or a confused client (RFC 9700, refresh token rotation); the grant must be revoked. */
  | { kind: 'reused'; grantId: string };

/**
 * Refresh tokens of the interactive sign-in (issued when `offline` was granted). Opaque and
 * rotated on every use: the presented token stops working and a new one takes its place. Decision
 * (the spec is silent): they do not expire; they live as long as the emulator process, like
 * everything else it holds.
 */
export class RefreshTokens {
  private readonly active = new Map<string, SignInGrant>();
  private readonly activeTokenOfGrant = new Map<string, string>();
  private readonly retired = new Map<string, string>();

  issue(grant: SignInGrant): string {
    // The `emu_rt_` prefix (after Hydra's `ory_rt_`) lets secret scanners and humans tell what leaked.
    const token = `emu_rt_${randomBytes(32).toString('base64url')}`;
    this.active.set(token, grant);
    this.activeTokenOfGrant.set(grant.id, token);
    return token;
  }

  lookup(token: string, clientId: string): RefreshLookup {
    const grant = this.active.get(token);
    if (grant === undefined) {
      const grantId = this.retired.get(token);
      return grantId === undefined ? { kind: 'unknown' } : { kind: 'reused', grantId };
    }
    return grant.clientId === clientId ? { kind: 'active', grant } : { kind: 'wrong-client' };
  }

  /**
   * Retires an active token and returns its successor. Call it in the same synchronous step as the
   * `lookup` that found it active, so two concurrent refreshes cannot both rotate it.
   */
  rotate(token: string): string {
    const grant = this.active.get(token);
    if (grant === undefined) throw new Error('rotate() needs an active refresh token');
    this.active.delete(token);
    this.retire(token, grant.id);
    return this.issue(grant);
  }

  /** Drops the grant's live refresh token; its retired ones keep answering `reused`. */
  revokeGrant(grantId: string): void {
    const token = this.activeTokenOfGrant.get(grantId);
    if (token === undefined) return;
    this.activeTokenOfGrant.delete(grantId);
    this.active.delete(token);
    this.retire(token, grantId);
  }

  private retire(token: string, grantId: string): void {
    this.retired.set(token, grantId);
    if (this.retired.size > RETIRED_LIMIT) this.retired.delete(this.retired.keys().next().value!);
  }
}
