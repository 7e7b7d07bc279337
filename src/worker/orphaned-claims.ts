import type { Logger } from 'pino';
import type { IdempotencyStore } from '../idempotency/store.js';
import { systemClock, type Clock } from '../runtime/clock.js';

/** While claims wait to be given back, they are tried again this often. */
const RETRY_MS = 1_000;

/**
 * Claims that may have been taken with their answer lost (a claim call that failed: the store may
 * have committed it before the connection broke). Nobody would release them, and the redelivered
 * events would find their keys busy until the claims expire, a lease later. They are given back as
 * soon as the store answers again (after any call that went through, and every second meanwhile):
 * a redelivery polling a busy key then takes it within its next poll.
 */
export class OrphanedClaims {
  readonly #store: IdempotencyStore;
  readonly #logger: Logger;
  #lost: { keys: readonly string[]; owner: string }[] = [];
  readonly #clock: Clock;
  #timer: unknown = undefined;
  #releasing = false;
  #closed = false;

  readonly #onAnswered: () => void;

  /** `onAnswered`: a release went through (the store answers: the process stops backing off). */
  constructor(store: IdempotencyStore, logger: Logger, onAnswered: () => void = () => {}, clock: Clock = systemClock) {
    this.#store = store;
    this.#logger = logger;
    this.#onAnswered = onAnswered;
    this.#clock = clock;
  }

  /** `owner`'s claim call on `keys` failed. */
  add(keys: readonly string[], owner: string): void {
    if (this.#closed || keys.length === 0) return;
    this.#lost.push({ keys, owner });
    if (this.#timer === undefined) this.#arm();
  }

  /** Gives the lost claims back (the store answered a call). */
  giveBack(): void {
    if (this.#releasing || this.#lost.length === 0) return;
    this.#releasing = true;
    const lost = this.#lost;
    this.#lost = [];
    void Promise.allSettled(lost.map(({ keys, owner }) => this.#store.release(keys, owner))).then((results) => {
      this.#releasing = false;
      results.forEach((result, i) => {
        if (result.status === 'rejected' && !this.#closed) this.#lost.push(lost[i]!);
      });
      const released = results.filter((result) => result.status === 'fulfilled').length;
      if (released > 0) {
        this.#logger.info({ claims: released }, 'claims whose answer was lost in a store failure given back: their events run again at once');
        this.#onAnswered();
      }
      if (this.#lost.length === 0) this.#stopTimer();
      else if (this.#timer === undefined && !this.#closed) this.#arm();
    });
  }

  close(): void {
    this.#closed = true;
    this.#lost = [];
    this.#stopTimer();
  }

  /** Tries again in RETRY_MS; the timer never keeps a finished process alive. */
  #arm(): void {
    const timer = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      this.giveBack();
    }, RETRY_MS) as { unref?: () => void };
    timer.unref?.();
    this.#timer = timer;
  }

  #stopTimer(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
