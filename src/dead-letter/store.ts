import type { StoreQuery } from './query.js';
import type { DeadLetterReason, DeadLetterSink, DeadLetterState, StoredDeadLetter } from './sink.js';

/** Records in state `dead` for one handler and reason (the `dead_letters` gauge). */
export interface DeadLetterCount {
  handler: string;
  reason: DeadLetterReason;
  count: number;
}

/**
 * What every sink adapter offers beyond the worker's `write`: reading and changing the records. An
 * adapter is opened for one prefix (the `--idempotency-prefix` of the workers it serves) or, for
 * reading tools, for every prefix (`prefix` undefined; `write` then refuses).
 */
export interface DeadLetterStore extends DeadLetterSink {
  /** Up to `query.limit` records after `query.after`, in (deadLetteredAt, prefix, id) order. */
  list(query: StoreQuery): Promise<StoredDeadLetter[]>;
  /** The records with this id: one, or none; several only across prefixes. */
  get(id: string): Promise<StoredDeadLetter[]>;
  /**
   * Replaces a record (same prefix and id) if its state is still `expected`; false otherwise.
   * The compare-and-set keeps two operators from undoing each other's change.
   */
  update(next: StoredDeadLetter, expected: DeadLetterState): Promise<boolean>;
  /** Records in state `dead` by handler and reason, in one query; absent where that is not cheap (file). */
  countDead?(): Promise<DeadLetterCount[]>;
}
