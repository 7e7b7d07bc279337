import type { CloudEvent } from '../types.js';
import { readEventLogLine, type RawLogLine } from './log-lines.js';
import type { DeliveryView, EventDetail, EventStatus, EventSummary, RunView } from './protocol.js';

/**
 * Bounds of one event's record: the console keeps the last N events, and what it adds to each must
 * stay small whatever its handlers do (a handler logging in a loop, an event redelivered for hours).
 */
export const RECORD_LIMITS = {
  /** Text of `data` beyond this is not sent to the page (the detail view says how big it was). */
  dataChars: 64 * 1024,
  deliveries: 50,
  runs: 100,
  logs: 200,
} as const;

function pushBounded<T>(list: T[], item: T, max: number): boolean {
  list.push(item);
  if (list.length <= max) return false;
  list.shift();
  return true;
}

/**
 * What the console knows of one event: its deliveries, the runs of its handlers, their log lines.
 * Cheap to keep up to date (the worker pays for it as events flow): the event's `data` is kept as the
 * worker received it and serialised only when a page opens the event, and log lines are kept as
 * text, read then too.
 */
export class EventRecord {
  readonly event: CloudEvent;
  readonly seenAt: number;
  readonly #deliveries: DeliveryView[] = [];
  readonly #runs: RunView[] = [];
  readonly #logs: RawLogLine[] = [];
  #logsDropped = 0;
  #noHandler = false;

  constructor(event: CloudEvent, seenAt: number) {
    this.event = event;
    this.seenAt = seenAt;
  }

  get latestDelivery(): DeliveryView | undefined {
    return this.#deliveries[this.#deliveries.length - 1];
  }

  addDelivery(delivery: DeliveryView): void {
    pushBounded(this.#deliveries, delivery, RECORD_LIMITS.deliveries);
  }

  /** The ack of one delivery (by lease and generation: a later delivery may exist already). */
  acknowledged(leaseId: string, generation: number, ack: NonNullable<DeliveryView['ack']>): boolean {
    const delivery = this.#deliveries.findLast((d) => d.leaseId === leaseId && d.generation === generation);
    if (delivery === undefined) return false;
    delivery.ack = ack;
    return true;
  }

  addRun(run: RunView): void {
    pushBounded(this.#runs, run, RECORD_LIMITS.runs);
  }

  markNoHandler(): void {
    this.#noHandler = true;
  }

  addLog(line: RawLogLine): void {
    if (pushBounded(this.#logs, line, RECORD_LIMITS.logs)) this.#logsDropped += 1;
  }

  /**
   * `pending` until every handler has an outcome for the latest delivery; then the worst latest
   * outcome of a handler wins: dead-lettered (or a replay that failed again), failed, replayed, ok;
   * `duplicate` when every handler had done it before this console saw it run (another process, or
   * before a restart).
   */
  get status(): EventStatus {
    if (this.#noHandler && this.#runs.length === 0) return 'no-handler';
    const latest = this.#latestRuns();
    const deliveredAttempt = this.latestDelivery?.attempt ?? 0;
    if (latest.length === 0 || latest.every((run) => (run.deliveryAttempt ?? run.attempt) < deliveredAttempt)) return 'pending';
    // A redelivery that found the handler's work done (a batch requeued for another event, an ack
    // lost to a fault): the outcome of the run that did it stands, when this console saw it.
    const outcomes = new Set(latest.map((run) => (run.outcome === 'duplicate' ? (this.#doneBy(run.handler) ?? 'duplicate') : run.outcome)));
    if (outcomes.has('dead_lettered') || outcomes.has('replay-failed')) return 'dead_lettered';
    if (outcomes.has('failed')) return 'failed';
    if (outcomes.has('replayed')) return 'replayed';
    if (outcomes.size === 1 && outcomes.has('duplicate')) return 'duplicate';
    return 'ok';
  }

  summary(): EventSummary {
    const delivery = this.latestDelivery as DeliveryView;
    return {
      id: this.event.id,
      type: this.event.type,
      subject: this.event.subject,
      sequence: this.event.sequence,
      seenAt: this.seenAt,
      delivery,
      deliveries: this.#deliveries.length,
      status: this.status,
      handlers: this.#latestRuns().map((run) => ({
        handler: run.handler,
        outcome: run.outcome,
        attempt: run.attempt,
        durationMs: run.durationMs,
        logs: this.#logs.filter((line) => line.handler === run.handler).length,
      })),
    };
  }

  detail(): EventDetail {
    const data = JSON.stringify(this.event.data) ?? 'null';
    const read = this.#logs.map((raw) => readEventLogLine(raw.text)).filter((l) => l !== undefined);
    // In time order: a thread's lines come over a channel of their own and may arrive after a line
    // the main thread wrote later (the worker's line about the run's failure). A stable sort.
    read.sort((a, b) => a.line.time - b.line.time);
    const stacks = new Map<string, string>();
    for (const { line, stack } of read) if (stack !== undefined && line.handler !== undefined) stacks.set(`${line.handler} ${line.attempt ?? ''}`, stack);
    return {
      ...this.summary(),
      ...(this.event.time === undefined ? {} : { time: this.event.time }),
      ...(this.event.source === undefined ? {} : { source: this.event.source }),
      data: data.length > RECORD_LIMITS.dataChars ? data.slice(0, RECORD_LIMITS.dataChars) : data,
      ...(data.length > RECORD_LIMITS.dataChars ? { dataTruncated: { bytes: Buffer.byteLength(data) } } : {}),
      deliveryHistory: this.#deliveries.map((d) => ({ ...d })),
      runs: this.#runs.map((run) => {
        // run:done carries the error's message and code; its stack comes from the worker's log line.
        const stack = run.error === undefined ? undefined : stacks.get(`${run.handler} ${run.attempt}`);
        return stack === undefined || run.error?.stack !== undefined ? { ...run } : { ...run, error: { ...run.error!, stack } };
      }),
      logs: read.map(({ line }) => line),
      logsDropped: this.#logsDropped,
    };
  }

  /** The last run of each handler, handlers in the order they first ran. */
  #latestRuns(): RunView[] {
    const latest = new Map<string, RunView>();
    for (const run of this.#runs) latest.set(run.handler, run);
    return [...latest.values()];
  }

  /** The outcome of the handler's last run that was not a duplicate (that run did the work). */
  #doneBy(handler: string): RunView['outcome'] | undefined {
    return this.#runs.findLast((run) => run.handler === handler && run.outcome !== 'duplicate')?.outcome;
  }
}
