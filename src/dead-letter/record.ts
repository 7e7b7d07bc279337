import { idempotencyKey } from '../idempotency/key.js';
import type { DeadLetterRecord, StoredDeadLetter } from './sink.js';

/**
 * The record's life after the write, as pure functions over the stored form: every adapter keeps
 * the whole record and changes it only through these, so they all agree on what a replay or a
 * purge leaves behind.
 */

/** A record's id: the handler's idempotency key, `<handler>:<event id>`. */
export function deadLetterId(handler: string, eventId: string): string {
  return idempotencyKey(handler, eventId);
}

/** The stored form of a fresh record: `dead`, never replayed. */
export function toStored(record: DeadLetterRecord, prefix: string): StoredDeadLetter {
  return { id: deadLetterId(record.handler, record.event.id), prefix, state: 'dead', replayAttempts: 0, ...record };
}

/** A replay that failed: still `dead`, with the replay's error in place of the old one. */
export function afterFailedReplay(record: StoredDeadLetter, error: StoredDeadLetter['error'], at: Date = new Date()): StoredDeadLetter {
  return { ...record, error, replayAttempts: record.replayAttempts + 1, updatedAt: at.toISOString() };
}

/** A replay that succeeded (or found the replay's effect already done). */
export function afterReplay(record: StoredDeadLetter, at: Date = new Date()): StoredDeadLetter {
  const iso = at.toISOString();
  return { ...record, state: 'replayed', replayAttempts: record.replayAttempts + 1, replayedAt: iso, updatedAt: iso };
}

/** A replay found the key applied meanwhile (a later delivery succeeded): nothing ran, nothing will. */
export function afterResolved(record: StoredDeadLetter, at: Date = new Date()): StoredDeadLetter {
  const iso = at.toISOString();
  return { ...record, state: 'resolved', resolvedAt: iso, updatedAt: iso };
}

/**
 * A purge: the envelope stays, so a listing still shows what was dropped and when, but the event's
 * data and the error's stack (the bulk of a record, and the part that may hold personal data) go.
 */
export function afterPurge(record: StoredDeadLetter, at: Date = new Date()): StoredDeadLetter {
  const iso = at.toISOString();
  const { stack: _stack, ...error } = record.error;
  return { ...record, state: 'purged', event: { ...record.event, data: null }, error, purgedAt: iso, updatedAt: iso };
}

/** Milliseconds of `deadLetteredAt` (0 for a record that lost it, so it sorts first rather than failing). */
export function deadLetteredAtMs(record: Pick<DeadLetterRecord, 'deadLetteredAt'>): number {
  const ms = Date.parse(record.deadLetteredAt);
  return Number.isFinite(ms) ? ms : 0;
}
