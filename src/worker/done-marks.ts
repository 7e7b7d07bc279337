import type { Logger } from 'pino';
import { deadLetteredKey } from '../idempotency/key.js';
import type { IdempotencyStore } from '../idempotency/store.js';

/**
 * Done marks of one lease, written as events finish: the keys finished in the same turn of the event
 * loop go to the store in one `markDone` call (one round trip to Redis or PostgreSQL, one SQLite
 * group), within a turn of finishing, never held until the lease ends. Each write is added to
 * `pendingWrites`, which the ack waits for: after an `ok` ack the events are gone.
 */
export class DoneMarkWriter {
  readonly #store: Pick<IdempotencyStore, 'markDone' | 'flush'>;
  readonly #logger: Logger;
  readonly #pendingWrites: Promise<unknown>[];
  readonly #onError: (err: unknown) => void;
  #keys: string[] = [];
  #scheduled = false;

  constructor(store: Pick<IdempotencyStore, 'markDone' | 'flush'>, logger: Logger, pendingWrites: Promise<unknown>[], onError: (err: unknown) => void = () => {}) {
    this.#store = store;
    this.#logger = logger;
    this.#pendingWrites = pendingWrites;
    this.#onError = onError;
  }

  add(key: string): void {
    this.#keys.push(key);
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => this.flush());
  }

  /**
   * A key that ended dead-lettered: its done mark and the mark of how it ended, in the same write
   * (one `markDone`), so a replay runs its record only while it is dead-lettered, never after a
   * later delivery applied it (idempotency/key.ts, deadLetteredKey).
   */
  addDeadLettered(key: string): void {
    this.add(key);
    this.#keys.push(deadLetteredKey(key));
  }

  /** Writes the keys gathered so far now (the batch calls it before waiting for its writes). */
  flush(): void {
    this.#scheduled = false;
    if (this.#keys.length === 0) return;
    const keys = this.#keys;
    this.#keys = [];
    this.#pendingWrites.push(
      this.#store.markDone(keys).catch((err: unknown) => {
        // Not marked: a redelivery re-runs these effects (at least once), it never skips them.
        this.#logger.error({ err, keys: keys.length }, 'idempotency store: mark done failed');
        this.#onError(err);
      }),
    );
  }

  /**
   * The batch is about to wait for its writes before acking: write the keys gathered so far, and
   * have the store commit at once what it holds back for a group commit (SQLite's window of a few
   * milliseconds would otherwise hold every batch's ack that long).
   */
  flushForAck(): void {
    this.flush();
    this.#store.flush?.();
  }
}
