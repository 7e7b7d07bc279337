import type { WorkerEmitter } from '../observability/worker-events.js';

/**
 * /readyz: ready when a credential was obtained, the handlers are loaded, and the last pull did not
 * answer with a configuration error (401 after the refresh, 400, 403, 404). Changes are emitted
 * as `ready:changed` with the reason, so logs and probes agree.
 */
export class Readiness {
  readonly #events: WorkerEmitter;
  #handlersLoaded = false;
  /** Some handler's setup has not succeeded yet (false once it has, or when none has a setup). */
  #settingUp = false;
  /** The last setup failure while pending (it is retried). */
  #setupFailure: { handler: string; message: string } | undefined = undefined;
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
    return this.#why(true);
  }

  /** `reason` as /readyz tells it: a failed setup names the handler but not its error (that is in the log, and could carry a secret). */
  get probeReason(): string | undefined {
    return this.#why(false);
  }

  #why(withError: boolean): string | undefined {
    if (!this.#handlersLoaded) return 'handlers not loaded';
    if (this.#settingUp) {
      const failure = this.#setupFailure;
      if (failure === undefined) return 'handlers not set up yet';
      return withError
        ? `setup of handler ${failure.handler} failed: ${failure.message}`
        : `setup of handler ${failure.handler} failed (retried; the error is in the log)`;
    }
    if (!this.#credential) return 'no credential obtained yet';
    const first = this.#configErrors.values().next();
    return first.done === true ? undefined : first.value;
  }

  handlersLoaded(): void {
    this.#handlersLoaded = true;
    this.#update();
  }

  /** Some handler has a setup: not ready until it succeeded everywhere. */
  setupPending(): void {
    this.#settingUp = true;
    this.#update();
  }

  /** A setup failed (it is retried): the reason names the handler. */
  setupFailed(handler: string, message: string): void {
    this.#settingUp = true;
    this.#setupFailure = { handler, message };
    this.#update();
  }

  setUp(): void {
    this.#settingUp = false;
    this.#setupFailure = undefined;
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
