import { listenTo, type WorkerEmitter, type WorkerEventMap } from '../observability/worker-events.js';
import type { ReplayResult } from '../dead-letter-admin/replay.js';
import { EventRecord } from './event-record.js';
import { compareSequences } from '../runtime/sequence.js';
import type { RawLogLine } from './log-lines.js';
import type { EventDetail, EventSummary, StreamMessages } from './protocol.js';

/** What the feed tells its subscribers (the stream of /api/stream). */
export interface FeedListener {
  /** Events that changed, and ids that left the list, coalesced over FLUSH_MS. */
  changed(summaries: EventSummary[], dropped: string[]): void;
  deadLettersChanged(): void;
  notice(notice: StreamMessages['notice']): void;
}

export interface ConsoleFeedOptions {
  /** Events kept (the oldest seen leaves first). */
  maxEvents: number;
  now?: () => number;
}

/** Changes reach the page at most this often: a busy worker costs a few messages a second, not one per event. */
export const FLUSH_MS = 200;
/** Batches remembered until their ack (far more than a process holds leases at once). */
const MAX_OPEN_BATCHES = 1_000;

/**
 * The console's view of the worker: the last `maxEvents` events with their deliveries, handler runs
 * and log lines, fed by the worker's event bus (it only listens, like metrics and logs), by the log
 * lines of handler runs (handler-log-tap.ts) and by the replays the page starts.
 *
 * Correlation uses only what the bus declares (src/observability/worker-events.ts): `lease:pulled` names the
 * lease, generation and attempt of its events; an event is in one lease at a time, so `run:done`
 * (which names the event, not the lease) belongs to the event's latest delivery; `ack:done` names
 * the lease and generation, which map back to the batch's events.
 */
export class ConsoleFeed {
  readonly maxEvents: number;
  readonly #now: () => number;
  readonly #records = new Map<string, EventRecord>();
  /** `leaseId generation` -> the ids of its events, until the ack. */
  readonly #batches = new Map<string, string[]>();
  readonly #listeners = new Set<FeedListener>();
  readonly #dirty = new Set<string>();
  #dropped: string[] = [];
  #flushTimer: NodeJS.Timeout | undefined;

  constructor(options: ConsoleFeedOptions) {
    if (!Number.isInteger(options.maxEvents) || options.maxEvents < 1) throw new RangeError(`maxEvents must be a positive integer (got ${options.maxEvents})`);
    this.maxEvents = options.maxEvents;
    this.#now = options.now ?? Date.now;
  }

  /** Listens to a worker's bus; returns the function that stops listening. */
  attach(events: WorkerEmitter): () => void {
    return listenTo(events, {
      'lease:pulled': (batch) => this.#pulled(batch),
      'run:done': (done) => this.#done(done),
      'ack:done': (ack) => this.#acked(ack),
      'pull:crashed': ({ workerId, error, restartInMs }) =>
        this.#notice(
          'error',
          `${workerId} crashed handling a pull: ${error instanceof Error ? error.message : String(error)} (it pulls again in ${restartInMs} ms)`,
        ),
      'ready:changed': ({ ready, reason }) =>
        this.#notice(ready ? 'info' : 'warn', ready ? 'worker ready' : `worker not ready${reason === undefined ? '' : `: ${reason}`}`),
      'breaker:state': ({ handler, state, failureRatio }) => this.#notice(state === 'closed' ? 'info' : 'warn', breakerNotice(handler, state, failureRatio)),
    });
  }

  subscribe(listener: FeedListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Every event kept, newest (highest sequence) first. */
  list(): EventSummary[] {
    return [...this.#records.values()].sort((a, b) => compareSequences(b.event.sequence, a.event.sequence)).map((record) => record.summary());
  }

  get(id: string): EventDetail | undefined {
    return this.#records.get(id)?.detail();
  }

  get size(): number {
    return this.#records.size;
  }

  /** A log line of a handler run (or the worker's line about one). */
  log(line: RawLogLine): void {
    const record = this.#records.get(line.eventId);
    if (record === undefined) return;
    record.addLog(line);
    this.#touch(line.eventId);
  }

  /** The outcome of a replay started from the console, shown as one more run of the event. */
  replayed(result: ReplayResult): void {
    if (result.outcome !== 'replayed' && result.outcome !== 'failed') return;
    const record = this.#records.get(result.eventId);
    if (record !== undefined) {
      record.addRun({
        handler: result.handler,
        outcome: result.outcome === 'replayed' ? 'replayed' : 'replay-failed',
        attempt: record.latestDelivery?.attempt ?? 1,
        deliveryAttempt: record.latestDelivery?.attempt ?? 1,
        durationMs: 0,
        at: this.#now(),
        ...(result.error === undefined ? {} : { error: result.error }),
      });
      this.#touch(result.eventId);
    }
  }

  deadLettersChanged(): void {
    for (const listener of this.#listeners) listener.deadLettersChanged();
  }

  close(): void {
    clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    this.#listeners.clear();
  }

  #pulled({ workerId, leaseId, generation, deliveryAttempt, events }: WorkerEventMap['lease:pulled'][0]): void {
    const at = this.#now();
    const ids: string[] = [];
    for (const event of events) {
      let record = this.#records.get(event.id);
      if (record === undefined) {
        record = new EventRecord(event, at);
        this.#records.set(event.id, record);
      }
      record.addDelivery({ workerId, leaseId, generation, attempt: deliveryAttempt, pulledAt: at });
      ids.push(event.id);
      this.#touch(event.id);
    }
    this.#batches.set(`${leaseId} ${generation}`, ids);
    if (this.#batches.size > MAX_OPEN_BATCHES) this.#batches.delete(this.#batches.keys().next().value as string);
    this.#evict();
  }

  #done({ event, handler, outcome, durationMs, error, attempt }: WorkerEventMap['run:done'][0]): void {
    const record = this.#records.get(event.id);
    if (record === undefined) return;
    const deliveryAttempt = record.latestDelivery?.attempt ?? 1;
    if (handler === undefined) record.markNoHandler();
    else
      record.addRun({
        handler,
        outcome,
        attempt: attempt ?? deliveryAttempt,
        deliveryAttempt,
        durationMs,
        at: this.#now(),
        ...(error === undefined ? {} : { error }),
      });
    this.#touch(event.id);
    if (outcome === 'dead_lettered') this.deadLettersChanged();
  }

  #acked({ leaseId, generation, sent, status }: WorkerEventMap['ack:done'][0]): void {
    const key = `${leaseId} ${generation}`;
    const ids = this.#batches.get(key);
    if (ids === undefined) return;
    this.#batches.delete(key);
    for (const id of ids) if (this.#records.get(id)?.acknowledged(leaseId, generation, { sent, status })) this.#touch(id);
  }

  #notice(level: StreamMessages['notice']['level'], message: string): void {
    for (const listener of this.#listeners) listener.notice({ at: this.#now(), level, message });
  }

  /** Drops the events seen first until `maxEvents` remain. */
  #evict(): void {
    while (this.#records.size > this.maxEvents) {
      const oldest = this.#records.keys().next().value as string;
      this.#records.delete(oldest);
      this.#dirty.delete(oldest);
      if (this.#listeners.size > 0) this.#dropped.push(oldest);
    }
  }

  /** Nobody listening: nothing to tell (a page that connects reads the whole list). */
  #touch(id: string): void {
    if (this.#listeners.size === 0) return;
    this.#dirty.add(id);
    if (this.#flushTimer === undefined) {
      this.#flushTimer = setTimeout(() => this.#flush(), FLUSH_MS);
      this.#flushTimer.unref();
    }
  }

  #flush(): void {
    this.#flushTimer = undefined;
    const changed: EventSummary[] = [];
    for (const id of this.#dirty) {
      const record = this.#records.get(id);
      if (record !== undefined) changed.push(record.summary());
    }
    this.#dirty.clear();
    const dropped = this.#dropped;
    this.#dropped = [];
    if (changed.length === 0 && dropped.length === 0) return;
    for (const listener of this.#listeners) listener.changed(changed, dropped);
  }
}

/** What the page says when a handler's circuit breaker changes (docs/handlers.md, "Failures and retries"). */
export function breakerNotice(handler: string, state: WorkerEventMap['breaker:state'][0]['state'], failureRatio: number): string {
  if (state === 'open')
    return `circuit breaker of handler ${handler} open: ${Math.round(failureRatio * 100)} % of its recent runs failed; its events wait, spending no attempts`;
  if (state === 'half-open') return `circuit breaker of handler ${handler} half-open: one event probes`;
  return `circuit breaker of handler ${handler} closed: its events run again`;
}
