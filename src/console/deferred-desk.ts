import type { DeferredRun, DeferredRuns } from '../idempotency/deferred.js';
import type { IdempotencyStore } from '../idempotency/store.js';

/** One deferred run as the Deferred page shows it. */
export interface DeferredRunView {
  key: string;
  handler: string;
  eventId: string;
  type: string;
  subject: string;
  sequence: string;
  reason: DeferredRun['reason'];
  /** When it may run (ms since the epoch); at or before `at`: due now. */
  retryAt: number;
  deferredAt: number;
}

export interface DeferredPage {
  /** False with a store that keeps no deferred runs (memory): runs wait in their lease. */
  available: boolean;
  runs: DeferredRunView[];
  /** The server's clock when the page was read. */
  at: number;
}

export interface DeferredDeskOptions {
  /** Opens the worker's idempotency store (its URL and prefix). */
  open: () => Promise<IdempotencyStore>;
  deferredOf: (store: IdempotencyStore) => DeferredRuns | undefined;
}

/**
 * The Deferred page's side of the store: the runs waiting there (docs/operations.md, "Deferred
 * runs"), read-only, through a connection of its own opened on first use. `durable-worker deferred`
 * runs one now or drops it.
 */
export class DeferredDesk {
  readonly #options: DeferredDeskOptions;
  #store: Promise<IdempotencyStore> | undefined;

  constructor(options: DeferredDeskOptions) {
    this.#options = options;
  }

  async list(limit: number): Promise<DeferredPage> {
    this.#store ??= this.#options.open();
    const deferred = this.#options.deferredOf(await this.#store);
    if (deferred === undefined) return { available: false, runs: [], at: Date.now() };
    const runs = await deferred.list({ limit });
    return {
      available: true,
      at: Date.now(),
      runs: runs.map((r) => ({
        key: r.key,
        handler: r.handler,
        eventId: r.event.id,
        type: r.event.type,
        subject: r.event.subject,
        sequence: r.sequence,
        reason: r.reason,
        retryAt: r.retryAtMs,
        deferredAt: r.deferredAtMs,
      })),
    };
  }

  /** Per handler, its deferred runs waiting for a limit (among its first `cap`); undefined when the store keeps none. */
  async limitWaits(handlers: readonly string[], cap: number): Promise<Map<string, number> | undefined> {
    this.#store ??= this.#options.open();
    const deferred = this.#options.deferredOf(await this.#store);
    if (deferred === undefined) return undefined;
    const counts = new Map<string, number>();
    for (const handler of handlers) counts.set(handler, (await deferred.list({ handler, limit: cap })).filter((r) => r.reason === 'limit').length);
    return counts;
  }

  async close(): Promise<void> {
    const store = this.#store;
    this.#store = undefined;
    await (await store?.catch(() => undefined))?.close();
  }
}
