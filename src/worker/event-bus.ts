import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import { DEPRECATED_EVENTS, type WorkerEmitter } from '../observability/worker-events.js';
import { RateLimiter } from './timing.js';

/** A listener's failure is logged at most this often per event name; the rest are counted. */
const LOG_INTERVAL_MS = 60_000;

/**
 * The worker's event bus. Listeners (metrics, logs, a user's code on `worker.events`) only watch the
 * worker: whatever one does, it must not change an outcome, fail an ack that committed, or crash a
 * workerId's pulls. So `emit` calls every listener even when one throws or returns a promise that rejects; the
 * failure is logged (at most once a minute per event, with how many were not logged) and reported as
 * `listener:error`, which `durable_worker_listener_errors_total{event}` counts. A failing
 * `listener:error` listener is only logged, so a broken metric cannot loop.
 */
class GuardedEventBus extends EventEmitter {
  readonly #logger: Logger;
  readonly #logLimiter = new RateLimiter(LOG_INTERVAL_MS);
  readonly #unlogged = new Map<string, number>();

  constructor(logger: Logger) {
    super();
    this.#logger = logger;
  }

  override emit(name: string | symbol, ...args: unknown[]): boolean {
    // `error` keeps its meaning: with no listener it throws. The worker never emits it.
    if (name === 'error') return super.emit(name, ...args);
    const heard = this.#emitGuarded(name, args);
    const deprecated = Object.hasOwn(DEPRECATED_EVENTS, name) ? DEPRECATED_EVENTS[name as keyof typeof DEPRECATED_EVENTS] : undefined;
    if (deprecated === undefined || this.listenerCount(deprecated.name) === 0) return heard;
    return this.#emitGuarded(deprecated.name, [(deprecated.payload as (payload: unknown) => unknown)(args[0])]) || heard;
  }

  #emitGuarded(name: string | symbol, args: unknown[]): boolean {
    // A copy, as EventEmitter's own emit makes: a listener that removes itself does not skip the next.
    const listeners = this.rawListeners(name);
    if (listeners.length === 0) return false;
    for (const listener of listeners) {
      try {
        const result: unknown = Reflect.apply(listener, this, args);
        if (typeof (result as PromiseLike<unknown> | undefined)?.then === 'function') {
          (result as PromiseLike<unknown>).then(undefined, (err: unknown) => this.#listenerFailed(name, err));
        }
      } catch (err) {
        this.#listenerFailed(name, err);
      }
    }
    return true;
  }

  #listenerFailed(name: string | symbol, err: unknown): void {
    const event = String(name);
    // This emit is guarded too; a failing `listener:error` listener is only logged.
    if (event !== 'listener:error') this.emit('listener:error', { event, error: err });
    if (!this.#logLimiter.allow(event, Date.now())) {
      this.#unlogged.set(event, (this.#unlogged.get(event) ?? 0) + 1);
      return;
    }
    const notLogged = this.#unlogged.get(event) ?? 0;
    this.#unlogged.delete(event);
    this.#logger.error(
      { err, event, ...(notLogged > 0 ? { notLogged } : {}) },
      `a listener of the worker's "${event}" event threw: ignored, the worker goes on (durable_worker_listener_errors_total counts them)`,
    );
  }
}

/** The worker's event bus, whose listeners cannot disturb the worker (see GuardedEventBus). */
export function createWorkerEventBus(logger: Logger): WorkerEmitter {
  const bus = new GuardedEventBus(logger);
  // Metrics, the summary, readiness and a few user listeners per event: more is a leak.
  bus.setMaxListeners(50);
  return bus as unknown as WorkerEmitter;
}
