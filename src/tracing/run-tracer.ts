/**
 * What the run path tells tracing, at a few points of a lease's life (docs/tracing.md): a pull that
 * returned a lease (`received`), each handler run (`process`), the settlement (`settle`), and the
 * store and dead-letter calls made for them (`call`). The worker holds one RunTracer; with tracing
 * off it is NOOP_TRACER, whose methods do nothing and return shared constants, so the run path pays
 * a few calls per event and loads no OpenTelemetry module.
 */
import type { AckStatus, CloudEvent, JobContext, LeaseBatch } from '../types.js';
import type { TraceCarrier } from './trace-context.js';

/** A handler failure as the run path has it (plain data from any thread). */
export interface TracedError {
  message: string;
  stack?: string | undefined;
  code?: string | undefined;
}

/** How a handler run ended, as recorded (`run:done`'s outcomes, and `unstarted`). */
export type TracedOutcome = 'ok' | 'failed' | 'duplicate' | 'dead_lettered' | 'unstarted' | 'deferred';

/** How a settlement ended: the ack's answer, or `error` when none came. */
export type TracedAckResult = 'committed' | 'requeued' | 'stale' | 'error';

export interface TracedLease {
  workerId: string;
  pulled: LeaseBatch;
  /** Epoch ms when the pull was sent: the receive span starts there. */
  pulledAtMs: number;
}

export interface TracedRun {
  handler: string;
  event: CloudEvent;
  ctx: JobContext;
}

/** Spans made for the work of one lease, one handler run or one settlement. */
export interface TraceScope {
  /** Runs `work` (a store call, the dead-letter write) in a child span named `name`. */
  call<T>(name: string, work: () => Promise<T>): Promise<T>;
}

export interface RunTrace extends TraceScope {
  /** The process span's context, for the job: the handler runs in it (in its thread too). */
  readonly carrier: TraceCarrier | undefined;
  end(outcome: TracedOutcome, error?: TracedError): void;
}

export interface SettleTrace extends TraceScope {
  end(result: TracedAckResult, error?: unknown): void;
}

export interface LeaseTrace extends TraceScope {
  /** A handler run starts (its claim checked, then dispatched): the process span. */
  process(run: TracedRun): RunTrace;
  /** The lease settles (done marks, then its ack): the settle span. */
  settle(sent: AckStatus): SettleTrace;
}

export interface RunTracer {
  readonly enabled: boolean;
  /** A pull returned a lease: the receive span (from the pull's start to now). */
  received(lease: TracedLease): LeaseTrace;
}

const callWork = <T>(_name: string, work: () => Promise<T>): Promise<T> => work();

const NOOP_RUN: RunTrace = Object.freeze({ carrier: undefined, call: callWork, end() {} });
const NOOP_SETTLE: SettleTrace = Object.freeze({ call: callWork, end() {} });
const NOOP_LEASE: LeaseTrace = Object.freeze({ call: callWork, process: () => NOOP_RUN, settle: () => NOOP_SETTLE });

/** Tracing off: no spans, no OpenTelemetry module loaded. */
export const NOOP_TRACER: RunTracer = Object.freeze({ enabled: false, received: () => NOOP_LEASE });
