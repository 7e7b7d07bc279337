import type { WorkerEmitter } from './events.js';

/** Events in progress across every loop of the process (`durable_worker_in_flight_events`). */
export class InFlightCounter {
  readonly #events: WorkerEmitter;
  #count = 0;

  constructor(events: WorkerEmitter) {
    this.#events = events;
  }

  get count(): number {
    return this.#count;
  }

  add(delta: number): void {
    if (delta === 0) return;
    this.#count += delta;
    this.#events.emit('inflight:changed', { inFlight: this.#count });
  }
}
