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
  readonly #store: Pick<IdempotencyStore, 'markDone' | 'markDeadLettered' | 'flush'>;
  readonly #logger: Logger;
  readonly #pendingWrites: Promise<unknown>[];
  readonly #onError: (err: unknown) => void;
  #keys: string[] = [];
  #dead: string[] = [];
  #scheduled = false;

  constructor(
    store: Pick<IdempotencyStore, 'markDone' | 'markDeadLettered' | 'flush'>,
    logger: Logger,
    pendingWrites: Promise<unknown>[],
    onError: (err: unknown) => void = () => {},
  ) {
    this.#store = store;
    this.#logger = logger;
    this.#pendingWrites = pendingWrites;
    this.#onError = onError;
  }

  add(key: string): void {
    this.#keys.push(key);
    this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => this.flush());
  }

  /**
   * A key that ended dead-lettered: its done mark and the mark of how it ended, in one write
   * (`markDeadLettered`, which leaves a key another worker applied meanwhile as it is), so a replay
   * runs its record only while it is dead-lettered (idempotency/key.ts, deadLetteredKey).
   */
  addDeadLettered(key: string): void {
    this.#dead.push(key);
    this.#schedule();
  }

  /** Writes the keys gathered so far now (the batch calls it before waiting for its writes). */
  flush(): void {
    this.#scheduled = false;
    if (this.#dead.length > 0) {
      const dead = this.#dead;
      this.#dead = [];
      const store = this.#store;
      this.#write(store.markDeadLettered === undefined ? store.markDone([...dead, ...dead.map(deadLetteredKey)]) : store.markDeadLettered(dead), dead.length);
    }
    if (this.#keys.length === 0) return;
    const keys = this.#keys;
    this.#keys = [];
    this.#write(this.#store.markDone(keys), keys.length);
  }

  #write(written: Promise<void>, count: number): void {
    this.#pendingWrites.push(
      written.catch((err: unknown) => {
        // Not marked: a redelivery re-runs these effects (at least once), it never skips them.
        this.#logger.error({ err, keys: count }, 'idempotency store: mark done failed');
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
