import type { WorkerEmitter } from '../observability/worker-events.js';

/**
 * Events running in the process, across all its leases (`durable_worker_in_flight_events`). `count`
 * is always exact; `inflight:changed` is emitted at most once per turn of the event loop with the
 * count at that moment (two emits per event were a visible cost with fast handlers).
 */
export class InFlightCounter {
  readonly #events: WorkerEmitter;
  #count = 0;
  #reported = 0;
  #scheduled = false;

  constructor(events: WorkerEmitter) {
    this.#events = events;
  }

  get count(): number {
    return this.#count;
  }

  add(delta: number): void {
    if (delta === 0) return;
    this.#count += delta;
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      if (this.#count === this.#reported) return;
      this.#reported = this.#count;
      this.#events.emit('inflight:changed', { inFlight: this.#count });
    });
  }
}
