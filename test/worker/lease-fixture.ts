/**
 * The pieces a held lease works with, for unit tests of the scheduler, the held lease, its events and
 * their runs on the fake clock: the memory store, a dispatcher whose runs end when the test says so
 * (a run that is never ended is one that hangs), an api that records acks, and a dead-letter sink in
 * memory. No network, no threads, no real timers.
 */
import pino from 'pino';
import type { DeadLetterRecord } from '../../src/dead-letter/sink.js';
import type { Dispatcher, DispatchResult, DispatchRun, LeaseDispatch } from '../../src/dispatch/types.js';
import type { LoadedHandler } from '../../src/handlers/loader.js';
import { Router } from '../../src/handlers/router.js';
import { MemoryIdempotencyStore } from '../../src/idempotency/memory.js';
import { createFakeClock, type FakeClock } from '../../src/testing/clock.js';
import type { AckRequest, AckResponse, CloudEvent, LeaseBatch } from '../../src/types.js';
import { Breakers } from '../../src/worker/breakers.js';
import { createWorkerEventBus } from '../../src/worker/event-bus.js';
import type { LeaseContext } from '../../src/worker/lease-view.js';
import { RateLimiter } from '../../src/worker/timing.js';

/** A dispatcher that starts nothing by itself: `started` holds the runs handed to it, `end` ends one. */
export class ManualDispatcher implements Dispatcher {
  readonly started: DispatchRun[] = [];
  /** Runs started and not ended, by `<handler>:<event id>`. */
  readonly #open = new Map<string, DispatchRun>();

  open(_signal: AbortSignal): LeaseDispatch {
    return {
      start: (run) => {
        this.started.push(run);
        this.#open.set(`${run.job.handler}:${run.job.event.id}`, run);
      },
      close: () => {},
    };
  }

  /** Run keys (`<handler>:<event id>`) started and not ended yet, in start order. */
  get running(): string[] {
    return [...this.#open.keys()];
  }

  /** Ends the open run of `key` (`<handler>:<event id>`). */
  end(key: string, result: DispatchResult = { status: 'ok', durationMs: 1 }): void {
    const run = this.#open.get(key);
    if (run === undefined) throw new Error(`no run of ${key} is open (open: ${this.running.join(', ') || 'none'})`);
    this.#open.delete(key);
    run.end(result);
  }

  async setUp(): Promise<void> {}
  async tearDown(): Promise<[]> {
    return [];
  }
  async close(): Promise<void> {}
}

export interface LeaseFixture {
  clock: FakeClock;
  context: LeaseContext;
  dispatcher: ManualDispatcher;
  store: MemoryIdempotencyStore;
  /** Acks sent, in order. */
  acks: AckRequest[];
  deadLetters: DeadLetterRecord[];
  /** Store failures reported to the process. */
  storeFailures: unknown[];
  force: AbortController;
}

export const handler = (name: string, types: string[] = ['t']): LoadedHandler => ({ name, file: `/handlers/${name}.js`, types });

export function leaseFixture(
  options: { handlers?: LoadedHandler[]; visibilitySeconds?: number; maxAttempts?: number; retryMs?: number; breaker?: boolean } = {},
): LeaseFixture {
  const clock = createFakeClock();
  const logger = pino({ level: 'silent' });
  const handlers = options.handlers ?? [handler('sync')];
  const dispatcher = new ManualDispatcher();
  const store = new MemoryIdempotencyStore({ doneTtlMs: 86_400_000, now: clock.now });
  const acks: AckRequest[] = [];
  const deadLetters: DeadLetterRecord[] = [];
  const storeFailures: unknown[] = [];
  const force = new AbortController();
  const retryMs = options.retryMs ?? 1_000;
  const context: LeaseContext = {
    destination: 'dest',
    api: {
      acknowledge: async (_destination: string, request: AckRequest): Promise<AckResponse> => {
        acks.push(request);
        return { status: request.status === 'ok' ? 'committed' : 'requeued', committed: null };
      },
    },
    store,
    dispatcher,
    deadLetter: { write: async (record) => void deadLetters.push(record), close: async () => {} },
    router: new Router(handlers),
    events: createWorkerEventBus(logger),
    logger,
    clock,
    visibilitySeconds: options.visibilitySeconds ?? 30,
    maxAttempts: options.maxAttempts ?? 3,
    retryBackoff: { minMs: retryMs, maxMs: retryMs },
    breakers: new Breakers(
      handlers.map((h) => h.name),
      { enabled: options.breaker ?? false, failureRatio: 0.5, window: 4, cooldownMs: 5_000 },
      logger,
      () => {},
      clock,
    ),
    storeFailed: (err) => void storeFailures.push(err),
    storeAnswered: () => {},
    nearDeadlineWarnings: new RateLimiter(60_000),
    forceSignal: force.signal,
  };
  return { clock, context, dispatcher, store, acks, deadLetters, storeFailures, force };
}

let leases = 0;

/** A batch as the platform hands it out: events `<subject>/<id>` in stream order (ids must be unique per test). */
export function batchOf(events: { id: string; subject: string; type?: string }[], attempt = 1): LeaseBatch {
  leases++;
  return {
    leaseId: `lease-${leases}`,
    generation: 1,
    attempt,
    events: events.map(
      ({ id, subject, type }, i) =>
        ({
          specversion: '1.0',
          id,
          source: 'test',
          type: type ?? 't',
          subject,
          sequence: String(leases * 1_000 + i),
          time: '2026-01-01T00:00:00Z',
          data: {},
        }) as CloudEvent,
    ),
  };
}
