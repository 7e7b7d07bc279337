/**
 * An AbortSignal that aborts once a timeout passes, for one call at a time, and the same signal from
 * call to call until it has aborted: creating an AbortController and registering the client's
 * listener on its signal for every ack is not cheap next to what a no-op handler costs per event.
 */
export class ReusableTimeoutSignal {
  #controller = new AbortController();
  #timer: NodeJS.Timeout | undefined = undefined;

  /** The signal for the next call: it aborts with `reason` after `ms` unless `disarm` comes first. */
  arm(ms: number, reason: string): AbortSignal {
    clearTimeout(this.#timer);
    if (this.#controller.signal.aborted) this.#controller = new AbortController();
    const controller = this.#controller;
    this.#timer = setTimeout(() => controller.abort(new Error(reason)), ms);
    return controller.signal;
  }

  /** The call ended: its signal will not abort. */
  disarm(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
