import type { WorkerEmitter } from '../observability/worker-events.js';

/**
 * Leases held and events buffered (leased, not started) across the process, for
 * `durable_worker_leases_held` and the summary line: `leases:changed` is emitted at most once per
 * turn of the event loop, with the figures at that moment (they change with every event started).
 */
export class LeaseGauge {
  readonly #events: WorkerEmitter;
  #held = 0;
  #buffered = 0;
  #reportedHeld = 0;
  #reportedBuffered = 0;
  #scheduled = false;

  constructor(events: WorkerEmitter) {
    this.#events = events;
  }

  set(held: number, buffered: number): void {
    this.#held = held;
    this.#buffered = buffered;
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      if (this.#held === this.#reportedHeld && this.#buffered === this.#reportedBuffered) return;
      this.#reportedHeld = this.#held;
      this.#reportedBuffered = this.#buffered;
      this.#events.emit('leases:changed', { held: this.#held, buffered: this.#buffered });
    });
  }
}
