import { ErrorCodes } from '../errors.js';
import type { LoadedHandler } from '../handlers/loader.js';
import type { BeginOptions, EffectTransaction, EffectTransactionsOptions } from '../idempotency/postgres-transactions.js';
import type { CloudEvent } from '../types.js';
import { batchOutcome, outcomeOfError } from './call-outcomes.js';
import type { CallOutcome, DispatchJob } from './types.js';

/** Where a transactional call opens its transaction: the PostgreSQL store's database, from this thread. */
export interface CallTransactions {
  begin(keys: readonly string[], options: BeginOptions): Promise<EffectTransaction>;
}

/** The transactions of one thread (or of the process with isolation `none`): opened on first use. */
export interface ThreadTransactions {
  open: () => Promise<CallTransactions>;
  /** Ends its connections (those of open transactions once they end). */
  close(): Promise<void>;
}

/**
 * Opens the store database's pool on the first transactional call, not before: `pg` is loaded only
 * where a transactional handler runs. A failed open is tried again by the next call.
 */
export function transactionsOnFirstUse(options: EffectTransactionsOptions): ThreadTransactions {
  let opened: Promise<CallTransactions & { close(): Promise<void> }> | undefined;
  return {
    open: () =>
      (opened ??= import('../idempotency/postgres-transactions.js')
        .then(({ EffectTransactions }) => EffectTransactions.open(options))
        .catch((err: unknown) => {
          opened = undefined;
          throw err;
        })),
    close: async () => {
      const pool = opened;
      opened = undefined;
      await pool?.then((transactions) => transactions.close()).catch(() => {});
    },
  };
}

/** What the transaction of a call needs of the call (run-handler.ts's HandlerCall). */
export interface TransactionalCall {
  readonly handler: LoadedHandler;
  readonly job: DispatchJob;
  /** When the call must end: its handler's timeout or the lease deadline. */
  readonly deadlineMs: number;
  /** It ended already (an abort: the deadline, a timeout, a forced shutdown). */
  readonly ended: boolean;
  now(): number;
  /** The transaction is open: `ctx.tx` is its client, and an abort destroys it. */
  hold(transaction: EffectTransaction): void;
  /** Calls the handler with these events (a single-event handler: the one). May throw. */
  invoke(events: readonly CloudEvent[]): unknown;
  finish(outcome: CallOutcome): void;
}

const OK: CallOutcome = Object.freeze({ status: 'ok' });
const DUPLICATE: CallOutcome = Object.freeze({ status: 'ok', duplicate: true });
const ROLLED_BACK: CallOutcome = Object.freeze({
  status: 'failed',
  error: { message: 'rolled back with its call: another event of the call failed (runs again, no attempt counted)', code: ErrorCodes.ROLLED_BACK },
});

/**
 * A transactional handler's call (docs/handlers.md, "Transactional handlers"): its events' keys
 * locked and read in one transaction of the store's database; the handler called with `ctx.tx` for
 * the events not done yet; then their done marks and the handler's writes committed together, or
 * nothing at all. A batch call is all or nothing: one event not ok rolls every event back, and
 * those that were ok end `failed` with DW_ERR_ROLLED_BACK (run again, not counted).
 *
 * A transaction still open at the call's deadline is destroyed by the abort (HandlerCall.abort),
 * and a call whose handler returns after its deadline never commits.
 */
export async function runInTransaction(call: TransactionalCall, transactions: (() => Promise<CallTransactions>) | undefined): Promise<void> {
  const { handler, job } = call;
  const keys = job.keys;
  if (keys === undefined || transactions === undefined) {
    return call.finish({
      status: 'failed',
      error: { message: `handler ${handler.name} is transactional: it runs only with a postgres:// idempotency store`, code: ErrorCodes.CONFIG },
    });
  }
  let transaction: EffectTransaction;
  try {
    // The server ends the transaction on its own a second after the deadline: a process frozen
    // or cut off mid-call holds the keys' locks no longer than its lease.
    transaction = await (
      await transactions()
    ).begin(keys, { serverTimeoutMs: Math.max(1_000, job.ctx.leaseDeadlineMs - call.now() + 1_000), prefix: job.keyPrefix });
  } catch (err) {
    return call.finish(outcomeOfError(err));
  }
  if (call.ended) {
    transaction.destroy(new Error('its call ended before its transaction opened'));
    return;
  }
  const events = job.events ?? [job.event];
  const states = transaction.states;
  if (states.includes('busy')) {
    await transaction.rollback();
    return call.finish({
      status: 'failed',
      error: { message: `another worker's transaction holds a key of ${handler.name} on this event: tried again shortly`, code: ErrorCodes.KEY_BUSY },
    });
  }
  const fresh: CloudEvent[] = [];
  const freshKeys: string[] = [];
  for (let i = 0; i < events.length; i++) {
    if (states[i] !== 'new') continue;
    fresh.push(events[i] as CloudEvent);
    freshKeys.push(keys[i] as string);
  }
  // Every event committed by another worker since this lease claimed it: nothing to run.
  if (fresh.length === 0) {
    await transaction.rollback();
    return call.finish(events.length === 1 ? DUPLICATE : { status: 'ok', results: events.map(() => DUPLICATE) });
  }
  call.hold(transaction);
  const merged = (outcome: CallOutcome): CallOutcome => (fresh.length === events.length ? outcome : withDuplicates(outcome, states));
  let value: unknown;
  try {
    value = await call.invoke(fresh);
  } catch (err) {
    if (call.ended) return;
    await transaction.rollback();
    return call.finish(merged(outcomeOfError(err)));
  }
  // Aborted meanwhile: the abort ended the call and destroyed its transaction.
  if (call.ended) return;
  const outcome = handler.batch === undefined ? OK : batchOutcome(value, fresh.length, handler.name);
  if (outcome.status !== 'ok' || outcome.results !== undefined) {
    await transaction.rollback();
    return call.finish(merged(rolledBack(outcome)));
  }
  // Ended past its deadline before the abort's timer fired (a busy turn): never committed.
  if (call.now() >= call.deadlineMs) {
    transaction.destroy(new Error('deadline'));
    return call.finish({
      status: 'failed',
      error: { message: `handler ${handler.name} ended at its deadline: its transaction was rolled back`, code: ErrorCodes.HANDLER_TIMEOUT },
    });
  }
  try {
    await transaction.commit(freshKeys);
  } catch (err) {
    if (!abortedByStatement(err)) return call.finish(outcomeOfError(err));
    // The handler's own fault, not the store's: counted like a throw, so it is dead-lettered at the
    // last attempt rather than run again forever with the process backing off from a healthy store.
    const message = `handler ${handler.name} resolved after a statement in its transaction failed: nothing was committed (a statement whose error is caught needs a savepoint)`;
    return call.finish(merged({ status: 'failed', error: { message, code: ErrorCodes.TRANSACTION } }));
  }
  call.finish(merged(OK));
}

/** PostgreSQL's in_failed_sql_transaction: the done marks were refused because a statement before them failed. */
const IN_FAILED_TRANSACTION = '25P02';

/** A commit refused because a statement of the handler had failed (and the handler went on), along the error's causes. */
function abortedByStatement(err: unknown): boolean {
  for (let cause = err, depth = 0; typeof cause === 'object' && cause !== null && depth < 5; cause = (cause as { cause?: unknown }).cause, depth++) {
    if ((cause as { code?: unknown }).code === IN_FAILED_TRANSACTION) return true;
  }
  return false;
}

/** A batch call's outcome once its transaction rolled back: the events that were ok are undone too. */
function rolledBack(outcome: CallOutcome): CallOutcome {
  if (outcome.status !== 'ok' || outcome.results === undefined) return outcome;
  return { status: 'ok', results: outcome.results.map((result) => (result.status === 'ok' ? ROLLED_BACK : result)) };
}

/** The outcome of the events that ran, spread over all the call's events: those done already are duplicates. */
function withDuplicates(outcome: CallOutcome, states: readonly string[]): CallOutcome {
  const results: CallOutcome[] = [];
  let j = 0;
  for (const state of states) {
    if (state !== 'new') results.push(DUPLICATE);
    else results.push(outcome.status === 'ok' ? (outcome.results?.[j++] ?? OK) : outcome);
  }
  return { status: 'ok', results };
}
