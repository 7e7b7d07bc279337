import type { AckStatusLabel, RunOutcome as WorkerRunOutcome } from '../observability/worker-events.js';

/**
 * What the console's server sends its page (JSON over `/api/*` and the server-sent events of
 * `/api/stream`). The page (src/console/page/) reads exactly these shapes.
 *
 * Words: an *event* is one CloudEvent of the consumer; a *delivery* is one lease of it (a pull, with
 * its attempt and generation); a *run* is one handler's outcome for one delivery.
 */

/** The outcome of a run: the worker's (`run:done`), or a replay's from the Dead letters page. */
export type RunOutcome = WorkerRunOutcome | 'replayed' | 'replay-failed';

/** The state of an event as the list shows it (see EventRecord.status). */
export type EventStatus = 'pending' | 'ok' | 'duplicate' | 'failed' | 'dead_lettered' | 'replayed' | 'no-handler';

export interface DeliveryView {
  workerId: string;
  leaseId: string;
  generation: number;
  attempt: number;
  /** Epoch ms of the pull. */
  pulledAt: number;
  /** How the batch was acknowledged (`ack:done`), once it was. */
  ack?: { sent: 'ok' | 'failed'; status: AckStatusLabel };
}

export interface RunView {
  handler: string;
  outcome: RunOutcome;
  /** The handler's attempt on the event (a replay: the record's attempt and its replays). */
  attempt: number;
  /** The attempt of the delivery it ran in (omitted: the same as `attempt`). */
  deliveryAttempt?: number;
  durationMs: number;
  /** Epoch ms it ended. */
  at: number;
  error?: { message: string; code?: string; stack?: string };
}

export interface LogLineView {
  /** Epoch ms. */
  time: number;
  level: string;
  msg: string;
  handler?: string;
  attempt?: number;
  /** The line's other fields (user fields of `ctx.log`), as JSON, cut at a few KB. */
  fields?: string;
}

/** One row of the Events list. */
export interface EventSummary {
  id: string;
  type: string;
  subject: string;
  sequence: string;
  /** Epoch ms the console first saw it pulled. */
  seenAt: number;
  /** The latest delivery. */
  delivery: DeliveryView;
  deliveries: number;
  status: EventStatus;
  /** The latest run of each handler, in the order they first ran. */
  handlers: Array<{ handler: string; outcome: RunOutcome; attempt: number; durationMs: number; logs: number }>;
}

/** The Events detail view. */
export interface EventDetail extends EventSummary {
  time?: string;
  source?: string;
  /** The event's `data` as JSON text (cut when very large: see `dataTruncated`). */
  data: string;
  dataTruncated?: { bytes: number };
  deliveryHistory: DeliveryView[];
  runs: RunView[];
  logs: LogLineView[];
  /** Log lines dropped past the per-event bound. */
  logsDropped: number;
}

/** The Consumer page: the emulator's view of the consumer, sampled every second. */
export interface ConsumerView {
  /** Epoch ms of the sample (expiry countdowns count from it). */
  at: number;
  destination: string;
  /** False while the emulator cannot be read (then only `error` is meaningful). */
  reachable: boolean;
  error?: string;
  paused: boolean;
  head: string | null;
  committed: string | null;
  /** head - committed (from the start of the consumer before its first commit). */
  lag: number;
  leased: number;
  pendingRedelivery: number;
  leases: Array<{
    leaseId: string;
    workerId: string | null;
    generation: number;
    attempt: number;
    firstSequence: string;
    lastSequence: string;
    expiresAt: string;
  }>;
  faults: Record<string, unknown>;
}

/** One point of the lag chart. */
export interface LagPoint {
  at: number;
  lag: number;
}

/** The first message of every stream connection: who is talking (a new `instance` = a restarted process). */
export interface Hello {
  instance: string;
  startedAt: number;
  destination: string;
  maxEvents: number;
  deadLetterSink: string;
}

/** The outcome of the last reload of the handlers after a save (`dev` watching its handlers folder). */
export interface ReloadView {
  /** Epoch ms. */
  at: number;
  /** `failed`: the saved handlers could not load; the page shows the error until the next save. */
  state: 'loaded' | 'failed';
  message: string;
  error?: string;
  /** The changed files, relative to the handlers folder. */
  changed: string[];
}

/** Server-sent events of `/api/stream`: `event:` name -> `data:` JSON. */
export interface StreamMessages {
  hello: Hello;
  /** Every event kept, newest first (on connect). */
  events: EventSummary[];
  /** Events that changed since the last message (coalesced, a few times a second at most). */
  'events:changed': EventSummary[];
  /** Ids that left the bounded list. */
  'events:dropped': string[];
  consumer: ConsumerView;
  /** The lag history (on connect). */
  lag: LagPoint[];
  /** Something changed in the dead-letter sink (a new record, a replay, a purge): read the page again. */
  'dead-letters:changed': { at: number };
  /** A worker notice worth showing (handling a pull crashed, readiness changed). */
  notice: { at: number; level: 'info' | 'warn' | 'error'; message: string };
  /** The last reload of the handlers (on connect, when there was one, and after each save). */
  reload: ReloadView;
}
