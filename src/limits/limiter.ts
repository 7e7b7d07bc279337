import type { ResolvedLimits, ResolvedRate } from '../handlers/limits-options.js';
import type { LimitCheck, PermitStore } from '../idempotency/permits.js';
import { systemClock, type Clock } from '../runtime/clock.js';
import type { CloudEvent } from '../types.js';
import { AdaptiveRate } from './adaptive-rate.js';

/** The concurrency permits a started run holds until it ends. */
export interface RunPermit {
  handler: string;
  token: string;
  checks: readonly LimitCheck[];
}

/** One event's answer: its permit, or how long to wait before asking again. */
export type PermitResult =
  | { granted: true; permit: RunPermit }
  | { granted: false; waitMs: number; /** the limit's gap between starts at its pace (0: a concurrency limit) */ paceMs: number };

/** A handler's declared limits, as data (its `perKey.key` function left out). */
export interface DeclaredLimits {
  rate?: ResolvedRate;
  concurrency?: number;
  perKey?: { rate?: ResolvedRate; concurrency?: number };
  adaptive: boolean;
}

/** What the metrics and the dev console read per handler, in this process. */
export interface LimitsView {
  declared: DeclaredLimits;
  /** Starts per second the handler's rate allows now (the adaptive rate as it moves); undefined without a handler rate. */
  allowedPerSecond: number | undefined;
  /** With an adaptive `perKey.rate`: the keys whose rate this process follows, and the lowest allowed now (starts per second). */
  perKeyAllowed?: { keys: number; lowestPerSecond: number | undefined };
  /** Runs waiting for a permit now. */
  waiting: number;
  /** Runs started under the limits and not ended yet (holding their concurrency permits, if any). */
  inFlight: number;
  /** Throttles heard (RetryLaterError, a 429/503 to the forwarding handler). */
  throttles: number;
}

/** The limits of every handler that declares some, read as they are now (RunGate.metrics). */
export interface LimitsReader {
  /** `deployment`: they hold across the replicas sharing the store; `process`: in this process alone. */
  scope: PermitStore['scope'];
  handlers: readonly string[];
  view: (handler: string) => LimitsView | undefined;
}

/** The gap between starts of the slowest rate among `checks` (per / max), in ms. */
function paceOf(checks: readonly LimitCheck[]): number {
  let gapMs = 0;
  for (const check of checks) if (check.kind === 'rate') gapMs = Math.max(gapMs, check.perMs / check.max);
  return gapMs;
}

/**
 * A rate's window as the store keeps it: `per` and a margin (10 %, at most 100 ms). A start is logged
 * when its permit is granted, and reaches its handler a little later (a round trip, an event loop
 * busy elsewhere, a thread's queue): without the margin, a start delayed at the end of one window
 * lands in the next one's first moments, and the handler sees more than max starts in a window of
 * `per`. The margin covers a delay that varies by up to itself between two starts.
 */
export function storedWindowMs(perMs: number): number {
  return perMs + Math.min(100, perMs * 0.1);
}

/** Adaptive rates kept per key at most; the oldest key's is forgotten (it starts afresh). */
const MAX_ADAPTIVE_KEYS = 10_000;

class HandlerLimits {
  readonly adaptiveByKey = new Map<string, AdaptiveRate>();
  readonly rate: AdaptiveRate | undefined;
  waiting = 0;
  inFlight = 0;
  throttles = 0;

  constructor(
    readonly name: string,
    readonly limits: ResolvedLimits,
    readonly clock: Clock,
  ) {
    this.rate = limits.rate === undefined ? undefined : new AdaptiveRate(limits.rate.max, limits.rate.perMs, clock);
  }

  /** AIMD moves the innermost declared rate: the key's when `perKey.rate` is declared, else the handler's. */
  get adaptsPerKey(): boolean {
    return this.limits.adaptive && this.limits.perKey?.rate !== undefined;
  }

  keyOf(event: CloudEvent): string | undefined {
    const perKey = this.limits.perKey;
    if (perKey === undefined) return undefined;
    try {
      return String(perKey.key(event));
    } catch {
      // A key function that throws puts its events together under one key rather than failing them.
      return '';
    }
  }

  keyRate(key: string, rate: ResolvedRate): AdaptiveRate {
    let adaptive = this.adaptiveByKey.get(key);
    if (adaptive === undefined) {
      if (this.adaptiveByKey.size >= MAX_ADAPTIVE_KEYS) this.adaptiveByKey.delete(this.adaptiveByKey.keys().next().value as string);
      adaptive = new AdaptiveRate(rate.max, rate.perMs, this.clock);
      this.adaptiveByKey.set(key, adaptive);
    }
    return adaptive;
  }

  /** The checks of one event's run, and the adaptive rates they use. */
  checksOf(event: CloudEvent): { checks: LimitCheck[]; rates: AdaptiveRate[] } {
    const checks: LimitCheck[] = [];
    const rates: AdaptiveRate[] = [];
    const { rate, concurrency, perKey } = this.limits;
    if (rate !== undefined && this.rate !== undefined) {
      const max = (this.limits.adaptive && !this.adaptsPerKey) || rate.max === undefined ? this.rate.max : rate.max;
      checks.push({ kind: 'rate', id: this.name, max, perMs: storedWindowMs(rate.perMs) });
      rates.push(this.rate);
    }
    if (concurrency !== undefined) checks.push({ kind: 'concurrency', id: this.name, max: concurrency });
    const key = this.keyOf(event);
    if (perKey !== undefined && key !== undefined) {
      const id = JSON.stringify([this.name, key]);
      if (perKey.rate !== undefined) {
        const adaptive = this.adaptsPerKey ? this.keyRate(key, perKey.rate) : undefined;
        checks.push({ kind: 'rate', id, max: adaptive?.max ?? (perKey.rate.max as number), perMs: storedWindowMs(perKey.rate.perMs) });
        if (adaptive !== undefined) rates.push(adaptive);
      }
      if (perKey.concurrency !== undefined) checks.push({ kind: 'concurrency', id, max: perKey.concurrency });
    }
    return { checks, rates };
  }
}

/**
 * The limits of every handler that declares some, on one permit store: `take` asks for the permits
 * of many runs in one store call; a run that got one `release`s it when it ends; `throttled` tells
 * the adaptive rates. Waiting is the caller's (the worker's): the answer says how long.
 */
export class Limiter {
  readonly #permits: PermitStore;
  readonly #clock: Clock;
  readonly #handlers = new Map<string, HandlerLimits>();
  readonly #releaseWaiters = new Map<string, Set<() => void>>();

  constructor(permits: PermitStore, clock: Clock = systemClock) {
    this.#permits = permits;
    this.#clock = clock;
  }

  /** `deployment` with a shared store (Redis, PostgreSQL), `process` otherwise. */
  get scope(): PermitStore['scope'] {
    return this.#permits.scope;
  }

  add(handler: string, limits: ResolvedLimits): void {
    this.#handlers.set(handler, new HandlerLimits(handler, limits, this.#clock));
  }

  has(handler: string): boolean {
    return this.#handlers.has(handler);
  }

  /** Whether `handler`'s rate is adaptive (AIMD). */
  isAdaptive(handler: string): boolean {
    return this.#handlers.get(handler)?.limits.adaptive === true;
  }

  get handlers(): string[] {
    return [...this.#handlers.keys()];
  }

  /**
   * Permits for runs of `handler`, one per event (a batch call counts as its number of events: the
   * events granted may start, the others wait), in one store call. `ttlMs`: how long each run may
   * last at most (its lease's deadline), after which its concurrency permits expire.
   */
  async take(handler: string, runs: readonly { event: CloudEvent; ttlMs: number }[]): Promise<PermitResult[]> {
    const limits = this.#handlers.get(handler);
    if (limits === undefined) throw new Error(`no limits for handler ${handler}`);
    const asked = runs.map((run) => limits.checksOf(run.event));
    const answers = await this.#permits.take(asked.map(({ checks }, i) => ({ checks, ttlMs: Math.max(1, (runs[i] as { ttlMs: number }).ttlMs) })));
    return answers.map((answer, i) => {
      const { checks, rates } = asked[i] as { checks: LimitCheck[]; rates: AdaptiveRate[] };
      if (answer.granted) {
        limits.inFlight++;
        return { granted: true, permit: { handler, token: answer.token, checks } };
      }
      if (answer.refusedBy === 'rate') for (const rate of rates) rate.limited();
      return { granted: false, waitMs: answer.waitMs, paceMs: answer.refusedBy === 'rate' ? paceOf(checks) : 0 };
    });
  }

  /** The id of the innermost limit of `event`'s run: its key's with `perKey`, else its handler's. */
  limitIdOf(handler: string, event: CloudEvent): string {
    const key = this.#handlers.get(handler)?.keyOf(event);
    return key === undefined ? handler : JSON.stringify([handler, key]);
  }

  /** Gives a run's concurrency permits back and wakes this process's runs waiting for one. */
  async release(permit: RunPermit): Promise<void> {
    const limits = this.#handlers.get(permit.handler);
    if (limits !== undefined) limits.inFlight = Math.max(0, limits.inFlight - 1);
    if (!permit.checks.some((check) => check.kind === 'concurrency')) return;
    try {
      await this.#permits.release(permit.token, permit.checks);
    } finally {
      const waiters = this.#releaseWaiters.get(permit.handler);
      this.#releaseWaiters.delete(permit.handler);
      for (const wake of waiters ?? []) wake();
    }
  }

  /**
   * Resolves after `waitMs`, or earlier when a run of `handler` releases its permits here, or when
   * `signal` aborts. Counts the wait in the handler's `waiting`.
   */
  wait(handler: string, waitMs: number, signal?: AbortSignal): Promise<void> {
    const limits = this.#handlers.get(handler);
    if (limits !== undefined) limits.waiting++;
    return new Promise<void>((resolve) => {
      let waiters = this.#releaseWaiters.get(handler);
      if (waiters === undefined) this.#releaseWaiters.set(handler, (waiters = new Set()));
      const done = () => {
        this.#clock.clearTimeout(timer);
        waiters.delete(done);
        signal?.removeEventListener('abort', done);
        if (limits !== undefined) limits.waiting--;
        resolve();
      };
      const timer = this.#clock.setTimeout(done, waitMs);
      waiters.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  /** The downstream said "too many" to a run of `handler` on `event`: its adaptive rate comes down. */
  throttled(handler: string, event: CloudEvent, retryAfterMs = 0): void {
    const limits = this.#handlers.get(handler);
    if (limits === undefined) return;
    limits.throttles++;
    if (!limits.limits.adaptive) return;
    if (limits.adaptsPerKey) {
      const key = limits.keyOf(event);
      const rate = limits.limits.perKey?.rate;
      if (key !== undefined && rate !== undefined) limits.keyRate(key, rate).throttled(retryAfterMs);
    } else limits.rate?.throttled(retryAfterMs);
  }

  view(handler: string): LimitsView | undefined {
    const limits = this.#handlers.get(handler);
    if (limits === undefined) return undefined;
    const { rate, concurrency, perKey, adaptive } = limits.limits;
    const declared: DeclaredLimits = { adaptive };
    if (rate !== undefined) declared.rate = rate;
    if (concurrency !== undefined) declared.concurrency = concurrency;
    if (perKey !== undefined)
      declared.perKey = {
        ...(perKey.rate === undefined ? {} : { rate: perKey.rate }),
        ...(perKey.concurrency === undefined ? {} : { concurrency: perKey.concurrency }),
      };
    const view: LimitsView = {
      declared,
      allowedPerSecond: limits.rate?.perSecond,
      waiting: limits.waiting,
      inFlight: limits.inFlight,
      throttles: limits.throttles,
    };
    if (limits.adaptsPerKey) {
      let lowest: number | undefined;
      for (const keyRate of limits.adaptiveByKey.values()) lowest = Math.min(lowest ?? Infinity, keyRate.perSecond);
      view.perKeyAllowed = { keys: limits.adaptiveByKey.size, lowestPerSecond: lowest };
    }
    return view;
  }
}
