import type { WorkerEmitter } from './events.js';

/**
 * /readyz: ready when a credential was obtained, the handlers are loaded, and no loop's last pull
 * answered with a configuration error (401 after the refresh, 400, 403, 404). Changes are emitted
 * as `ready:changed` with the reason, so logs and probes agree.
 */
export class Readiness {
  readonly #events: WorkerEmitter;
  #handlersLoaded = false;
  #credential = false;
  readonly #configErrors = new Map<string, string>();
  #ready = false;

  constructor(events: WorkerEmitter) {
    this.#events = events;
  }

  get ready(): boolean {
    return this.#ready;
  }

  /** Why the worker is not ready, or undefined when it is. */
  get reason(): string | undefined {
    if (!this.#handlersLoaded) return 'handlers not loaded';
    if (!this.#credential) return 'no credential obtained yet';
    const first = this.#configErrors.values().next();
    return first.done === true ? undefined : first.value;
  }

  handlersLoaded(): void {
    this.#handlersLoaded = true;
    this.#update();
  }

  credentialObtained(): void {
    if (this.#credential) return;
    this.#credential = true;
    this.#update();
  }

  configError(workerId: string, reason: string): void {
    this.#configErrors.set(workerId, reason);
    this.#update();
  }

  configOk(workerId: string): void {
    if (this.#configErrors.delete(workerId)) this.#update();
  }

  #update(): void {
    const reason = this.reason;
    const ready = reason === undefined;
    if (ready === this.#ready) return;
    this.#ready = ready;
    this.#events.emit('ready:changed', ready ? { ready } : { ready, reason });
  }
}
