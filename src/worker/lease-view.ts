import type { Logger } from 'pino';
import type { ConsumerApi } from '../client/consumer-api.js';
import type { DeadLetterSink } from '../dead-letter/sink.js';
import type { Dispatcher, LeaseDispatch } from '../dispatch/types.js';
import type { LoadedHandler } from '../handlers/loader.js';
import type { Router } from '../handlers/router.js';
import type { ClaimState, FailureHistory, IdempotencyStore } from '../idempotency/store.js';
import type { LeaseTrace, RunTracer } from '../tracing/run-tracer.js';
import type { JobContext, LeaseBatch } from '../types.js';
import type { Clock } from '../runtime/clock.js';
import type { Breakers } from './breakers.js';
import type { DeferredRuns } from '../idempotency/deferred.js';
import type { RecentChains } from './recent-chains.js';
import type { DoneMarkWriter } from './done-marks.js';
import type { RunOutcome, WorkerEmitter } from '../observability/worker-events.js';
import type { RetryBackoff } from './retry-delay.js';
import type { RateLimiter } from './timing.js';
import type { RunGate } from '../limits/run-gate.js';
import type { WorkerSlot } from './worker-ids.js';

/** What a held lease needs from the worker: the same for every lease of the process. */
export interface LeaseContext {
  destination: string;
  api: Pick<ConsumerApi, 'acknowledge'>;
  store: IdempotencyStore;
  dispatcher: Dispatcher;
  deadLetter: DeadLetterSink;
  router: Router<LoadedHandler>;
  events: WorkerEmitter;
  logger: Logger;
  /** Every deadline, retry time and wait of a lease and its runs: the system clock, or a test's fake one. */
  clock: Clock;
  visibilitySeconds: number;
  /** `--max-attempts`: a failure of a handler's attempt this high on an event dead-letters it. */
  maxAttempts: number;
  /** `--retry-backoff-min` / `--retry-backoff-max`. */
  retryBackoff: RetryBackoff;
  /** A breaker per handler: whether its runs may start, and what they did. */
  breakers: Breakers;
  /** The store failed (a claim, a done mark, a count): the process backs off as for a failing platform. */
  storeFailed(err: unknown): void;
  /** A claim went through again after the store failed. */
  storeAnswered(): void;
  nearDeadlineWarnings: RateLimiter;
  /** Aborted at forced shutdown: running handlers are aborted, the lease acked failed. */
  forceSignal: AbortSignal;
  /** Spans of the lease's life (`--otel`); default: none. */
  tracer?: RunTracer;
  /** The store's deferred runs (SQLite, Redis, PostgreSQL); undefined with the memory store: runs wait in their lease. */
  deferred?: DeferredRuns;
  /** Chains this process deferred a run into lately (with `deferred`). */
  recentChains?: RecentChains;
  /** A run was deferred until `atMs`: the deferred runner wakes by then. */
  runDeferredAt?(atMs: number): void;
  /** The limits of the handlers that declare some (src/limits); undefined when none does. */
  limits?: RunGate | undefined;
  /** A claim call failed, perhaps after it went through: `owner`'s claims on `keys` are given back once the store answers. */
  claimsLost?(keys: readonly string[], owner: string): void;
}

/** Where an event was when it ended or was parked: the scheduler counts each place apart. */
export type EventPlace = 'waiting' | 'running' | 'retrying';

/** How an event ended in its lease: every handler ok, duplicate or dead-lettered; one failed; or none of them ran. */
export type EventEnd = 'settled' | 'failed' | 'unstarted';

/**
 * A held lease as its events and their runs see it (HeldLease is the one implementation): what they
 * read, and the three things they report. An event names itself by its index in the lease.
 */
export interface LeaseView {
  readonly context: LeaseContext;
  readonly pulled: LeaseBatch;
  readonly slot: WorkerSlot;
  readonly workerId: string;
  readonly log: Logger;
  readonly expiresAtMs: number;
  readonly deadlineMs: number;
  /** Claim owner: the generation is part of it, so a redelivery is a new owner even for the same worker. */
  readonly claimOwner: string;
  /** keys[keyStart[i] .. keyStart[i + 1]) are event i's keys, in route order; claims[k] is key k's claim. */
  readonly keys: readonly string[];
  readonly keyStart: Int32Array;
  readonly routes: readonly (readonly LoadedHandler[])[];
  readonly claims: readonly ClaimState[];
  /** By key position, the failures the store counted before this lease (undefined when no key has any). */
  readonly failures: readonly (FailureHistory | undefined)[] | undefined;
  readonly jobContext: JobContext;
  readonly doneMarks: DoneMarkWriter;
  readonly dispatch: LeaseDispatch;
  readonly trace: LeaseTrace;
  /** Aborts at the deadline or at forced shutdown: every run of the lease listens to it. */
  readonly signal: AbortSignal;
  /** Its claims are stored: its events may start. */
  readonly claimed: boolean;
  /** No event of it starts any more (deadline, forced shutdown, drain). */
  readonly stopped: boolean;
  /** Chains that held deferred runs when its keys were claimed (undefined when none did, or without deferral). */
  readonly deferredChains: ReadonlySet<string> | undefined;
  /** Its events are the heads of deferred chains (a lease of the deferred runner): the chain rule does not hold them back. */
  readonly runsChainHeads: boolean;
  /** Keys of its runs that were deferred (again) while it held them (kept by a lease of the deferred runner). */
  readonly deferredKeys: Set<string> | undefined;
  /** Claims given back (with the ack, or at once when nothing else waits): a redelivery finds them free. */
  release(keys: string[]): void;
  /** Event `index` may start: it joins the lease's ready queue (the scheduler's, when its wait is over). */
  enqueueReady(index: number): void;
  /** Event `index` ended (`place`: where it was then). */
  eventEnded(index: number, end: EventEnd, place: EventPlace): void;
  /** Event `index` ran, failed, and waits in the lease for its retry time. */
  eventRetrying(index: number): void;
  /** Event `index`, being dropped, had its chained run started already: it counts as running. */
  chainedStarted(index: number): void;
}

/** What a handler run reports to: its event (LeaseEvent). */
export interface RunOwner {
  readonly lease: LeaseView;
  readonly event: LeaseBatch['events'][number];
  /** One of its runs (key position `k`) ended; a failed one says when it may run again, if it may. */
  handlerEnded(k: number, outcome: RunEnd, retryAtMs: number | undefined): void;
}

/**
 * How one handler run ended for its event: an outcome of `run:done`, `unstarted` (the handler was
 * never called), or `deferred` (stored to run later, outside the lease: the lease need not wait for it).
 */
export type RunEnd = RunOutcome | 'unstarted' | 'deferred';
