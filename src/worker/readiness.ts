import type { WorkerEmitter } from './events.js';

/**
 * /readyz: ready when a credential was obtained, the handlers are loaded, and no loop's last pull
 * answered with a configuration error (401 after the refresh, 400, 403, 404). Changes are emitted
 * as `ready:changed` with the reason, so logs and probes agree.
 */
export class Readiness {
  readonly #events: WorkerEmitter;
  #handlersLoaded = false;
  /** Why the handlers' setup has not succeeded yet (undefined once it has, or when none has a setup). */
  #setupReason: string | undefined = undefined;
  /** The same without the error's message, for /readyz's body (an error message could carry a secret). */
  #setupProbeReason: string | undefined = undefined;
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
    if (this.#setupReason !== undefined) return this.#setupReason;
    if (!this.#credential) return 'no credential obtained yet';
    const first = this.#configErrors.values().next();
    return first.done === true ? undefined : first.value;
  }

  /** `reason` as /readyz tells it: a failed setup names the handler but not its error (that is in the log). */
  get probeReason(): string | undefined {
    const reason = this.reason;
    return reason !== undefined && reason === this.#setupReason ? this.#setupProbeReason : reason;
  }

  handlersLoaded(): void {
    this.#handlersLoaded = true;
    this.#update();
  }

  /** Some handler has a setup: not ready until it succeeded everywhere. */
  setupPending(): void {
    this.#setupReason = 'handlers not set up yet';
    this.#setupProbeReason = this.#setupReason;
    this.#update();
  }

  /** A setup failed (it is retried): the reason names the handler. */
  setupFailed(handler: string, message: string): void {
    this.#setupReason = `setup of handler ${handler} failed: ${message}`;
    this.#setupProbeReason = `setup of handler ${handler} failed (retried; the error is in the log)`;
    this.#update();
  }

  setUp(): void {
    this.#setupReason = undefined;
    this.#setupProbeReason = undefined;
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
