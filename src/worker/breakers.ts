import type { Logger } from 'pino';
import type { BreakerChange, BreakerState } from '../observability/worker-events.js';

/** `--breaker*`: when a handler's breaker opens, and for how long. */
export interface BreakerOptions {
  /** `--no-breaker` turns every breaker off (runs always start). */
  enabled: boolean;
  /** Opens when at least this share of the last `window` runs failed (0 < ratio <= 1). */
  failureRatio: number;
  /** How many of the handler's most recent runs are weighed (and at least this many ran). */
  window: number;
  /** Open this long before a probe. */
  cooldownMs: number;
}

/**
 * What holds an event back, and until when: a handler's retry time (`retry`), or its open breaker
 * (`breaker`: until its cool-down ends, or its probe reports).
 */
export interface Blocked {
  reason: 'retry' | 'breaker';
  handler: string;
  untilMs: number;
}

/** How a run that a breaker counted ended: `none` for one that never ran (a probe given back). */
export type RunVerdict = 'ok' | 'failed' | 'none';

/** One handler's breaker: its last runs in a ring, its state, its cool-down. */
class Breaker {
  state: BreakerState = 'closed';
  /** 1 = that run failed. */
  readonly #ring: Uint8Array;
  #next = 0;
  #count = 0;
  #failures = 0;
  openUntilMs = 0;
  /** Half-open: the probe run is on its way. */
  probing = false;
  timer: NodeJS.Timeout | undefined = undefined;

  constructor(window: number) {
    this.#ring = new Uint8Array(window);
  }

  get failureRatio(): number {
    return this.#count === 0 ? 0 : this.#failures / this.#count;
  }

  /** Adds a run; true when the window is full and fails at least `ratio`. */
  add(failed: boolean, ratio: number): boolean {
    const ring = this.#ring;
    if (this.#count === ring.length) this.#failures -= ring[this.#next] as number;
    else this.#count++;
    ring[this.#next] = failed ? 1 : 0;
    if (failed) this.#failures++;
    this.#next = (this.#next + 1) % ring.length;
    return this.#count === ring.length && this.#failures >= ratio * ring.length;
  }

  reset(): void {
    this.#ring.fill(0);
    this.#next = this.#count = this.#failures = 0;
  }
}

/**
 * A circuit breaker per handler (docs/handlers.md, "Failures and retries"): when most of a handler's
 * recent runs fail, its dependency is taken to be down, and its events stop starting (they wait in
 * their leases and spend no attempts) until a probe, one run after the cool-down, succeeds. The
 * scheduler asks `admit` before it starts an event and reports every run's end with `record`;
 * `onChange` hears each change of state (the scheduler wakes or picks waiting events, the pull
 * controller pulls again, metrics and logs follow).
 */
export class Breakers {
  readonly #options: BreakerOptions;
  readonly #byHandler = new Map<string, Breaker>();
  readonly #logger: Logger;
  readonly #onChange: (change: BreakerChange) => void;
  /** Breakers not closed: while none is, `admit` looks nothing up. */
  #notClosed = 0;

  constructor(handlers: readonly string[], options: BreakerOptions, logger: Logger, onChange: (change: BreakerChange) => void) {
    this.#options = options;
    this.#logger = logger;
    this.#onChange = onChange;
    if (options.enabled) for (const handler of handlers) this.#byHandler.set(handler, new Breaker(options.window));
  }

  /**
   * Undefined when a run of every one of `handlers` may start now (a half-open breaker takes it as
   * its probe); else the breaker that holds it back and when to ask again.
   */
  admit(handlers: readonly string[], nowMs: number): Blocked | undefined {
    if (this.#notClosed === 0) return undefined;
    let probe: Breaker | undefined;
    for (const handler of handlers) {
      const breaker = this.#byHandler.get(handler);
      if (breaker === undefined || breaker.state === 'closed') continue;
      if (breaker.state === 'open') return { reason: 'breaker', handler, untilMs: breaker.openUntilMs };
      if (breaker.probing) return { reason: 'breaker', handler, untilMs: nowMs + this.#options.cooldownMs };
      probe = breaker;
    }
    if (probe !== undefined) probe.probing = true;
    return undefined;
  }

  /** No breaker is open or half-open: every run may start. */
  get allClosed(): boolean {
    return this.#notClosed === 0;
  }

  /** Whether runs of `handler` start without asking (no breaker, or closed). */
  isClosed(handler: string): boolean {
    return this.#notClosed === 0 || (this.#byHandler.get(handler)?.state ?? 'closed') === 'closed';
  }

  state(handler: string): BreakerState {
    return this.#byHandler.get(handler)?.state ?? 'closed';
  }

  /** Every handler's breaker is open (none half-open): a pull would bring nothing that may run. */
  get allOpen(): boolean {
    if (this.#byHandler.size === 0 || this.#notClosed < this.#byHandler.size) return false;
    for (const breaker of this.#byHandler.values()) if (breaker.state !== 'open') return false;
    return true;
  }

  /** A run of `handler` ended (`none`: it never ran, e.g. a probe that did not start). */
  record(handler: string, verdict: RunVerdict, nowMs: number = Date.now()): void {
    const breaker = this.#byHandler.get(handler);
    if (breaker === undefined) return;
    if (breaker.state === 'closed') {
      if (verdict === 'none') return;
      if (breaker.add(verdict === 'failed', this.#options.failureRatio)) this.#open(handler, breaker, nowMs, 'opened');
      return;
    }
    // Open: runs started before it opened end now; they say nothing new.
    if (breaker.state !== 'half-open' || !breaker.probing) return;
    breaker.probing = false;
    if (verdict === 'ok') {
      breaker.reset();
      breaker.state = 'closed';
      this.#notClosed--;
      this.#logger.info({ handler }, `circuit breaker of handler ${handler} closed: a probe run succeeded`);
      this.#onChange({ handler, state: 'closed', failureRatio: 0 });
    } else if (verdict === 'failed') this.#open(handler, breaker, nowMs, 'probe failed');
    // Given back unrun: still half-open, another event may probe.
    else this.#onChange({ handler, state: 'half-open', failureRatio: breaker.failureRatio });
  }

  /** Stops the cool-down timers (the worker is stopping). Idempotent. */
  close(): void {
    for (const breaker of this.#byHandler.values()) clearTimeout(breaker.timer);
  }

  #open(handler: string, breaker: Breaker, nowMs: number, why: 'opened' | 'probe failed'): void {
    if (breaker.state === 'closed') this.#notClosed++;
    breaker.state = 'open';
    breaker.openUntilMs = nowMs + this.#options.cooldownMs;
    const failureRatio = breaker.failureRatio;
    const seconds = Math.round(this.#options.cooldownMs / 100) / 10;
    if (why === 'opened') {
      this.#logger.warn(
        { handler, failureRatio: Math.round(failureRatio * 100) / 100, cooldownMs: this.#options.cooldownMs },
        `circuit breaker of handler ${handler} opened: ${Math.round(failureRatio * 100)} % of its last ${this.#options.window} runs failed; its events wait (spending no attempts), a probe in ${seconds} s`,
      );
    } else this.#logger.info({ handler }, `circuit breaker of handler ${handler}: the probe failed, open for ${seconds} s more`);
    clearTimeout(breaker.timer);
    breaker.timer = setTimeout(() => this.#halfOpen(handler, breaker), this.#options.cooldownMs);
    breaker.timer.unref();
    this.#onChange({ handler, state: 'open', failureRatio });
  }

  #halfOpen(handler: string, breaker: Breaker): void {
    breaker.timer = undefined;
    if (breaker.state !== 'open') return;
    breaker.state = 'half-open';
    breaker.probing = false;
    this.#logger.debug({ handler }, `circuit breaker of handler ${handler} half-open: one event probes`);
    this.#onChange({ handler, state: 'half-open', failureRatio: breaker.failureRatio });
  }
}
