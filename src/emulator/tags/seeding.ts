import type { IncomingMessage } from 'node:http';
import { HttpProblem } from '../http/problem.js';

/**
 * Emulator seeding endpoints (src/emulator/admin/routes.ts): loopback only, no credential. The
 * seeding routes create what the spec gives no way to create, so a remote caller must never reach them.
 */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (!address) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return v4.startsWith('127.') || address === '::1';
}

export function assertLoopback(req: IncomingMessage): void {
  if (!isLoopbackAddress(req.socket.remoteAddress)) {
    throw new HttpProblem(403, 'Emulator seeding endpoints answer loopback callers only.');
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID.test(value);
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Collects validation messages keyed by request path (spec: Problem details `errors`). */
export class ErrorBag {
  readonly errors: Record<string, string[]> = {};

  add(path: string, message: string): void {
    (this.errors[path] ??= []).push(message);
  }

  get empty(): boolean {
    return Object.keys(this.errors).length === 0;
  }
}
