import type { DeclaredLimits, LimitsReader } from '../limits/limiter.js';

/** One handler's limits as the Limits page shows them. */
export interface HandlerLimitsView {
  handler: string;
  declared: DeclaredLimits;
  /** Starts per second the handler's rate allows now (the adaptive rate as it moves); null without a handler rate. */
  allowedPerSecond: number | null;
  /** With an adaptive `perKey.rate`: the keys followed, and the lowest rate allowed now. */
  perKeyAllowed?: { keys: number; lowestPerSecond: number | null };
  /** Runs waiting in their lease for a permit now. */
  waiting: number;
  /** Runs deferred to the store until their limit lets them start (at most `DEFERRED_COUNT_CAP` counted); null when the store keeps none or could not be read. */
  deferred: number | null;
  /** Runs started under the limits and not ended. */
  inFlight: number;
  /** Throttles heard since the worker started: RetryLaterError, a 429/503 with Retry-After to the forwarding handler. */
  throttles: number;
}

export interface LimitsPage {
  /** False when no worker runs (a reload whose handlers did not start): the rest is empty. */
  running: boolean;
  /** `deployment`: the limits hold across the replicas sharing the store; `process`: in this one. Null without limits. */
  scope: LimitsReader['scope'] | null;
  /** The handlers that declare limits, by name; empty when none does. */
  handlers: HandlerLimitsView[];
  /** The server's clock when the page was read. */
  at: number;
}

/** Deferred runs of one handler read to count those waiting for a limit: past it, the page says "N+". */
export const DEFERRED_COUNT_CAP = 1_000;

/** What the desk needs of a running worker: its limits (undefined when no handler declares any) and its end. */
export interface LimitedWorker {
  limits?: LimitsReader | undefined;
  done: Promise<unknown>;
}

export interface LimitsDeskOptions {
  /** Per handler, the deferred runs whose reason is `limit` (DeferredDesk.limitWaits); undefined when the store keeps none. */
  deferredForLimits: (handlers: readonly string[], cap: number) => Promise<Map<string, number> | undefined>;
}

/**
 * The Limits page's side of the worker: what its limits are and do now, read from the worker's own
 * view of them (the one its metrics read, in this process). `dev --watch` starts a new worker on a
 * save: the desk follows the worker it was last given, and shows none once that one has stopped.
 */
export class LimitsDesk {
  readonly #options: LimitsDeskOptions;
  #worker: LimitedWorker | undefined;

  constructor(options: LimitsDeskOptions) {
    this.#options = options;
  }

  follow(worker: LimitedWorker): void {
    this.#worker = worker;
    void worker.done.then(() => {
      if (this.#worker === worker) this.#worker = undefined;
    });
  }

  async read(): Promise<LimitsPage> {
    const worker = this.#worker;
    const reader = worker?.limits;
    if (reader === undefined) return { running: worker !== undefined, scope: null, handlers: [], at: Date.now() };
    const deferred = await this.#options.deferredForLimits(reader.handlers, DEFERRED_COUNT_CAP).catch(() => undefined);
    const handlers: HandlerLimitsView[] = [];
    for (const handler of reader.handlers) {
      const view = reader.view(handler);
      if (view === undefined) continue;
      handlers.push({
        handler,
        declared: view.declared,
        allowedPerSecond: view.allowedPerSecond ?? null,
        ...(view.perKeyAllowed === undefined
          ? {}
          : { perKeyAllowed: { keys: view.perKeyAllowed.keys, lowestPerSecond: view.perKeyAllowed.lowestPerSecond ?? null } }),
        waiting: view.waiting,
        deferred: deferred === undefined ? null : (deferred.get(handler) ?? 0),
        inFlight: view.inFlight,
        throttles: view.throttles,
      });
    }
    return { running: true, scope: reader.scope, handlers, at: Date.now() };
  }
}
