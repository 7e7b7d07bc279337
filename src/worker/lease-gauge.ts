import type { WorkerEmitter } from '../observability/worker-events.js';

/**
 * Leases held and events queued (leased, not started) across the process, for
 * `durable_worker_leases_held` and the summary line: `leases:changed` is emitted at most once per
 * turn of the event loop, with the figures at that moment (they change with every event started).
 */
export class LeaseGauge {
  readonly #events: WorkerEmitter;
  #held = 0;
  #queued = 0;
  #reportedHeld = 0;
  #reportedQueued = 0;
  #scheduled = false;

  constructor(events: WorkerEmitter) {
    this.#events = events;
  }

  set(held: number, queued: number): void {
    this.#held = held;
    this.#queued = queued;
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      if (this.#held === this.#reportedHeld && this.#queued === this.#reportedQueued) return;
      this.#reportedHeld = this.#held;
      this.#reportedQueued = this.#queued;
      this.#events.emit('leases:changed', { held: this.#held, queued: this.#queued, buffered: this.#queued });
    });
  }
}
