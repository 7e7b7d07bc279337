import { backoffMs } from './timing.js';

/**
 * Whether the idempotency store answers, as the pull controller needs it: after a store failure the
 * process backs off once (`backOffMs`, growing with each failure in a row), then lets one pull out at
 * a time, whose lease's claim is the probe, until a claim goes through (docs/handlers.md, "Failures
 * and retries"). Pulls while the store fails would only be requeued.
 */
export class StoreProbe {
  readonly #baseMs: number;
  readonly #maxMs: number;
  #failing = false;
  /** A pull went out while the store was failing, and nothing has told of its claim yet. */
  #probeOut = false;
  #streak = 0;

  constructor(baseMs: number, maxMs: number) {
    this.#baseMs = baseMs;
    this.#maxMs = maxMs;
  }

  get failing(): boolean {
    return this.#failing;
  }

  /** No pull now: the store fails and a probe is out (or a pull, whose lease will be one). */
  holdsPull(pulling: number): boolean {
    return this.#failing && (this.#probeOut || pulling >= 1);
  }

  pullSent(): void {
    if (this.#failing) this.#probeOut = true;
  }

  /** The probe's pull brought no claim to make (no lease, its lease acked): another may go. */
  probeAnswered(): void {
    this.#probeOut = false;
  }

  /** A store failure: pulls wait for a probe from now on. */
  failed(): void {
    this.#failing = true;
    this.#probeOut = false;
  }

  /** The next back-off (one per failing probe, not per failure), and how many in a row so far. */
  nextBackOff(): { waitMs: number; streak: number } {
    this.#streak++;
    return { waitMs: Math.max(this.#baseMs / 2, backoffMs(this.#streak, this.#baseMs, this.#maxMs)), streak: this.#streak };
  }

  /** A claim went through: true when the store had been failing. */
  answered(): boolean {
    const was = this.#failing;
    this.#failing = this.#probeOut = false;
    this.#streak = 0;
    return was;
  }
}
