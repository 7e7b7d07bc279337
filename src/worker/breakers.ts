import type { Logger } from 'pino';
import type { BreakerChange, BreakerState } from '../observability/worker-events.js';
import { BREAKER_DEFAULTS } from '../config/failure-defaults.js';
import type { WorkerConfig } from '../config/types.js';
import { systemClock, type Clock } from '../runtime/clock.js';

/** `--breaker*`: when a handler's breaker opens, and for how long. */
export interface BreakerOptions {
  /** `--no-breaker` turns every breaker off (runs always start). */
  enabled: boolean;
  /** Opens when at least this share of the runs weighed failed (0 < ratio <= 1). */
  failureRatio: number;
  /** `--breaker-window`: the fewest runs in the time window that are weighed at all. */
  window: number;
  /** `--breaker-window-time`: how far back runs are weighed (default 10 s). */
  windowMs?: number;
  /** Open this long before a probe. */
  cooldownMs: number;
}

/** The breakers' options from the worker's configuration (`--breaker`, `--breaker-*`), defaults filled in. */
export function breakerOptionsOf(
  config: Pick<WorkerConfig, 'breaker' | 'breakerFailureRatio' | 'breakerWindow' | 'breakerWindowTimeMs' | 'breakerCooldownMs'>,
): BreakerOptions {
  return {
    enabled: config.breaker ?? BREAKER_DEFAULTS.breaker,
    failureRatio: config.breakerFailureRatio ?? BREAKER_DEFAULTS.breakerFailureRatio,
    window: config.breakerWindow ?? BREAKER_DEFAULTS.breakerWindow,
    windowMs: config.breakerWindowTimeMs ?? BREAKER_DEFAULTS.breakerWindowTimeMs,
    cooldownMs: config.breakerCooldownMs ?? BREAKER_DEFAULTS.breakerCooldownMs,
  };
}

/** The default time window of a breaker: a dependency's health is judged on the last ten seconds. */
export const DEFAULT_BREAKER_WINDOW_MS = 10_000;

/**
 * What holds a run back, and until when: a handler's retry time (`retry`), or its open breaker
 * (`breaker`: until its cool-down ends, or its probe reports).
 */
export interface Blocked {
  reason: 'retry' | 'breaker';
  handler: string;
  untilMs: number;
}

/**
 * How a run that a breaker counted ended: `none` for one that says nothing of the dependency (never
 * ran, a probe given back, a `RetryLaterError`, a `PermanentError`). An event's repeated failure
 * weighs as its first: while a dependency is down, a handler's later events of a subject wait behind
 * its first failure (its chain), so retries are most of what still runs. A few poison events still
 * cannot open it: the window is time (at least `window` runs in `windowMs`), and healthy runs in it
 * outweigh them.
 */
export type RunVerdict = 'ok' | 'failed' | 'none';

/** Buckets a time window is cut into: runs leave it a tenth of the window at a time. */
const BUCKETS = 10;

/**
 * The runs of one handler in the last `windowMs`, in buckets of a tenth of it (Resilience4j's
 * time-based sliding window): a count of runs and of failures per bucket.
 */
class TimeWindow {
  readonly #bucketMs: number;
  /** Per bucket: which tenth of time it holds (floor(now / bucketMs)), its runs and failures. */
  readonly #epoch = new Float64Array(BUCKETS).fill(-1);
  readonly #runs = new Uint32Array(BUCKETS);
  readonly #failures = new Uint32Array(BUCKETS);

  constructor(windowMs: number) {
    this.#bucketMs = Math.max(1, windowMs / BUCKETS);
  }

  add(failed: boolean, nowMs: number): void {
    const epoch = Math.floor(nowMs / this.#bucketMs);
    const i = epoch % BUCKETS;
    if (this.#epoch[i] !== epoch) {
      this.#epoch[i] = epoch;
      this.#runs[i] = 0;
      this.#failures[i] = 0;
    }
    this.#runs[i]!++;
    if (failed) this.#failures[i]!++;
  }

  /** Runs and failures within the window at `nowMs`. */
  totals(nowMs: number): { runs: number; failures: number } {
    const oldest = Math.floor(nowMs / this.#bucketMs) - BUCKETS + 1;
    let runs = 0;
    let failures = 0;
    for (let i = 0; i < BUCKETS; i++) {
      if ((this.#epoch[i] as number) < oldest) continue;
      runs += this.#runs[i] as number;
      failures += this.#failures[i] as number;
    }
    return { runs, failures };
  }

  reset(): void {
    this.#epoch.fill(-1);
  }
}

/** One handler's breaker: its recent runs, its state, its cool-down. */
class Breaker {
  state: BreakerState = 'closed';
  readonly runs: TimeWindow;
  openUntilMs = 0;
  /** Half-open: the probe run is on its way. */
  probing = false;
  timer: unknown = undefined;
  /** The failure share when it last opened (for the change it reports). */
  failureRatio = 0;

  constructor(windowMs: number) {
    this.runs = new TimeWindow(windowMs);
  }
}

/**
 * A circuit breaker per handler (docs/handlers.md, "Failures and retries"): when most of a handler's
 * runs of the last `windowMs` fail (and at least `window` ran), its dependency is taken to be down,
 * and its runs stop starting (they wait, spending no attempts) until a probe, one run after the
 * cool-down, succeeds. Only that handler's runs wait: the other handlers of the same events run.
 * What is weighed tells a dependency from a bad event: an event's repeated failures count once, and
 * a `RetryLaterError` or a `PermanentError` is not a failure of the dependency. `onChange` hears each
 * change of state (waiting runs wake, the pull controller pulls again, metrics and logs follow).
 * Time comes from the injected clock.
 */
export class Breakers {
  readonly #options: BreakerOptions;
  readonly #byHandler = new Map<string, Breaker>();
  readonly #logger: Logger;
  readonly #onChange: (change: BreakerChange) => void;
  readonly #clock: Clock;
  /** Breakers not closed: while none is, `admit` looks nothing up. */
  #notClosed = 0;

  constructor(handlers: readonly string[], options: BreakerOptions, logger: Logger, onChange: (change: BreakerChange) => void, clock: Clock = systemClock) {
    this.#options = options;
    this.#logger = logger;
    this.#onChange = onChange;
    this.#clock = clock;
    const windowMs = options.windowMs ?? DEFAULT_BREAKER_WINDOW_MS;
    if (options.enabled) for (const handler of handlers) this.#byHandler.set(handler, new Breaker(windowMs));
  }

  /**
   * Undefined when a run of every one of `handlers` may start now (a half-open breaker takes it as
   * its probe); else the breaker that holds it back and when to ask again.
   */
  admit(handlers: readonly string[], nowMs: number = this.#clock.now()): Blocked | undefined {
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

  /** When an open breaker lets a probe start (0 when it is not open). */
  openUntilMs(handler: string): number {
    const breaker = this.#byHandler.get(handler);
    return breaker?.state === 'open' ? breaker.openUntilMs : 0;
  }

  /** Every handler's breaker is open (none half-open): a pull would bring nothing that may run. */
  get allOpen(): boolean {
    if (this.#byHandler.size === 0 || this.#notClosed < this.#byHandler.size) return false;
    for (const breaker of this.#byHandler.values()) if (breaker.state !== 'open') return false;
    return true;
  }

  /** A run of `handler` ended (`none`: it says nothing of the dependency). */
  record(handler: string, verdict: RunVerdict, nowMs: number = this.#clock.now()): void {
    const breaker = this.#byHandler.get(handler);
    if (breaker === undefined) return;
    if (breaker.state === 'closed') {
      if (verdict === 'none') return;
      breaker.runs.add(verdict !== 'ok', nowMs);
      if (verdict === 'ok') return;
      const { runs, failures } = breaker.runs.totals(nowMs);
      if (runs >= this.#options.window && failures >= this.#options.failureRatio * runs) {
        breaker.failureRatio = failures / runs;
        this.#open(handler, breaker, nowMs, 'opened', runs);
      }
      return;
    }
    // Open: runs started before it opened end now; they say nothing new.
    if (breaker.state !== 'half-open' || !breaker.probing) return;
    breaker.probing = false;
    if (verdict === 'ok') {
      breaker.runs.reset();
      breaker.state = 'closed';
      this.#notClosed--;
      this.#logger.info({ handler }, `circuit breaker of handler ${handler} closed: a probe run succeeded`);
      this.#onChange({ handler, state: 'closed', failureRatio: 0 });
    } else if (verdict === 'failed') this.#open(handler, breaker, nowMs, 'probe failed', 0);
    // Given back unrun, or an end that says nothing of the dependency: still half-open, another run may probe.
    else this.#onChange({ handler, state: 'half-open', failureRatio: breaker.failureRatio });
  }

  /** Stops the cool-down timers (the worker is stopping). Idempotent. */
  close(): void {
    for (const breaker of this.#byHandler.values()) this.#clock.clearTimeout(breaker.timer);
  }

  #open(handler: string, breaker: Breaker, nowMs: number, why: 'opened' | 'probe failed', runs: number): void {
    if (breaker.state === 'closed') this.#notClosed++;
    breaker.state = 'open';
    breaker.openUntilMs = nowMs + this.#options.cooldownMs;
    const failureRatio = breaker.failureRatio;
    const seconds = Math.round(this.#options.cooldownMs / 100) / 10;
    if (why === 'opened') {
      const windowSeconds = Math.round((this.#options.windowMs ?? DEFAULT_BREAKER_WINDOW_MS) / 100) / 10;
      this.#logger.warn(
        { handler, failureRatio: Math.round(failureRatio * 100) / 100, cooldownMs: this.#options.cooldownMs },
        `circuit breaker of handler ${handler} opened: ${Math.round(failureRatio * 100)} % of its ${runs} runs of the last ${windowSeconds} s failed; its runs wait (spending no attempts), a probe in ${seconds} s`,
      );
    } else this.#logger.info({ handler }, `circuit breaker of handler ${handler}: the probe failed, open for ${seconds} s more`);
    this.#clock.clearTimeout(breaker.timer);
    breaker.timer = this.#clock.setTimeout(() => this.#halfOpen(handler, breaker), this.#options.cooldownMs);
    (breaker.timer as { unref?: () => void } | undefined)?.unref?.();
    this.#onChange({ handler, state: 'open', failureRatio });
  }

  #halfOpen(handler: string, breaker: Breaker): void {
    breaker.timer = undefined;
    if (breaker.state !== 'open') return;
    breaker.state = 'half-open';
    breaker.probing = false;
    this.#logger.debug({ handler }, `circuit breaker of handler ${handler} half-open: one run probes`);
    this.#onChange({ handler, state: 'half-open', failureRatio: breaker.failureRatio });
  }
}
