import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { afterFailedReplay, afterReplay, afterResolved } from '../dead-letter/record.js';
import type { StoredDeadLetter } from '../dead-letter/sink.js';
import type { DeadLetterStore } from '../dead-letter/store.js';
import { dispatchOnce } from '../dispatch/index.js';
import { toDispatchError } from '../dispatch/call-outcomes.js';
import type { DispatchError, Dispatcher, DispatchJob, DispatchResult } from '../dispatch/types.js';
import { ErrorCodes } from '../errors.js';
import { deadLetteredKey, idempotencyKey } from '../idempotency/key.js';
import type { ClaimState, IdempotencyStore } from '../idempotency/store.js';
import { sleep, systemClock } from '../runtime/clock.js';
import { safetyMarginMs } from '../worker/timing.js';

/**
 * Replaying a record runs the current handler once more on the recorded event, "through the
 * idempotency store" as `run` does, with two keys in the record's prefix, claimed together:
 * - the handler's own key `<handler>:<event id>`. Dead-lettering marked it done, so it is normally
 *   `done` and stays so; but when a worker was killed between the dead-letter write and that mark,
 *   the event is redelivered and a worker may be running it right now (`busy`: the replay waits),
 *   or will (`new`: the replay holds it, and marks it done with its own effect, so the redelivery
 *   skips the event instead of running the handler twice);
 * - the replay's key `/replay/<handler>:<event id>` (a handler name is a relative path, never
 *   starting with `/`, so it meets no handler's key). Marked done once the replay's effect is done:
 *   a second replay, a concurrent one (it waits while the first holds the claim) or one after a
 *   replay killed between that mark and the record's update finds it `done` and runs nothing, only
 *   marking the record `replayed`. A replay killed while the handler ran leaves a claim that
 *   expires: the next replay runs the handler again (at least once, like `run`).
 * - for a record whose worker marked how the key ended (`deadLetterMark`), that mark,
 *   `/dead/<handler>:<event id>`, written with the key's done mark: the handler's key done without
 *   it was applied by a later delivery (the worker was killed between the dead-letter write and its
 *   marks, and the event came back and succeeded), so the record is not run and becomes `resolved`.
 * A failure releases the claims and keeps the record `dead` with the new error.
 */
export function replayKey(handler: string, eventId: string): string {
  return `/replay/${idempotencyKey(handler, eventId)}`;
}

/** What happened to one record. */
export type ReplayOutcome =
  /** The handler ran ok: the record is `replayed`. */
  | 'replayed'
  /** An earlier or concurrent replay had done it: the record is `replayed`, nothing ran. */
  | 'already-replayed'
  /** Its key was applied meanwhile (a later delivery succeeded): the record is `resolved`, nothing ran. */
  | 'resolved'
  /** The handler failed (or could not run): the record stays `dead` with the new error. */
  | 'failed'
  /** Not run (or cut short): an earlier record of its subject failed (events of a subject keep their order), or the replay was stopped. */
  | 'skipped'
  /** Purged (before or during the replay): nothing ran, its data is gone. */
  | 'purged';

export interface ReplayResult {
  id: string;
  prefix: string;
  handler: string;
  eventId: string;
  outcome: ReplayOutcome;
  error?: DispatchError;
}

/** What the replay of one batch of records uses, opened once. */
export interface ReplayResources {
  store: DeadLetterStore;
  dispatcher: Dispatcher;
  /** Names of the handlers loaded (a record of another handler cannot run). */
  handlerNames: ReadonlySet<string>;
  /**
   * Names of the transactional handlers: their replay commits its effects with the replay's done
   * mark, in the record's prefix (the handler's own key is done since the event was dead-lettered).
   */
  transactionalHandlers?: ReadonlySet<string>;
  /** The idempotency store of a prefix (the workers' `--idempotency`), opened on first use. */
  idempotency(prefix: string): Promise<IdempotencyStore>;
  logger: Logger;
  /** Each record gets this long to run, as a batch gets its lease (`--visibility`). */
  visibilityMs: number;
  /** Records of different subjects replayed at once (`--concurrency`). */
  concurrency: number;
  /** Ends the replay between records (a signal): records not started keep their state. */
  signal?: AbortSignal | undefined;
}

const WAIT_FIRST_MS = 100;
const WAIT_MAX_MS = 1_000;

/** One replay run over many records: runs them subject by subject, reports each as it ends. */
export class ReplayRun {
  readonly #resources: ReplayResources;
  /** Claim owner: who holds a replay's claims, as a worker's lease owns its batch's. */
  readonly #owner = `dead-letters-replay:${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;

  constructor(resources: ReplayResources) {
    this.#resources = resources;
  }

  /** Replays `records` (at most `concurrency` subjects at once, each subject in stream order). */
  async run(records: readonly StoredDeadLetter[], onResult: (result: ReplayResult) => void): Promise<ReplayResult[]> {
    const chains = subjectChains(records);
    const results: ReplayResult[] = [];
    const report = (result: ReplayResult) => {
      results.push(result);
      onResult(result);
    };
    let next = 0;
    const runner = async () => {
      while (next < chains.length) {
        const chain = chains[next++] as StoredDeadLetter[];
        let failed = false;
        for (const record of chain) {
          if (failed || this.#resources.signal?.aborted === true) {
            report(resultOf(record, 'skipped'));
            continue;
          }
          const result = await this.replayOne(record);
          failed = result.outcome === 'failed';
          report(result);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(this.#resources.concurrency, chains.length)) }, runner));
    return results;
  }

  /** Replays one record (see the module comment). Never rejects for a handler's failure. */
  async replayOne(record: StoredDeadLetter): Promise<ReplayResult> {
    const log = this.#resources.logger.child({ id: record.id, prefix: record.prefix, eventId: record.event.id, handler: record.handler });
    if (record.state !== 'dead') return resultOf(record, notDead(record.state));
    if (!this.#resources.handlerNames.has(record.handler)) {
      const error = { message: `handler ${record.handler} is not among the handlers loaded (--handlers, --forward-url)`, code: ErrorCodes.HANDLER_LOAD };
      return this.#failed(record, error, log);
    }
    const key = idempotencyKey(record.handler, record.event.id);
    const keys = [key, replayKey(record.handler, record.event.id)];
    if (record.deadLetterMark === true) keys.push(deadLetteredKey(key));
    let idempotency: IdempotencyStore | undefined;
    try {
      idempotency = await this.#resources.idempotency(record.prefix);
      return await this.#claimAndRun(record, idempotency, keys, log);
    } catch (err) {
      // A store or sink that failed: the record stays as it was; a claim of ours expires (or goes now).
      await idempotency?.release(keys, this.#owner).catch(() => {});
      return this.#failed(record, toDispatchError(err), log, { keepError: true });
    }
  }

  async #claimAndRun(record: StoredDeadLetter, idempotency: IdempotencyStore, keys: string[], log: Logger): Promise<ReplayResult> {
    const deadlineMs = Date.now() + this.#resources.visibilityMs;
    const claimed = await this.#claim(idempotency, keys, deadlineMs);
    if (claimed === 'done') {
      await this.#markReplayed(record, log);
      return resultOf(record, 'already-replayed');
    }
    if (claimed === 'resolved') {
      await idempotency.release(keys, this.#owner);
      if (!(await this.#resources.store.update(afterResolved(record), 'dead'))) log.debug('record changed meanwhile: left as it is');
      log.info(`${record.id}: its key was applied by a later delivery; not replayed (resolved)`);
      return resultOf(record, 'resolved');
    }
    if (claimed === 'busy') {
      await idempotency.release(keys, this.#owner);
      return this.#failed(record, { message: `another process still holds ${keys.join(' or ')}: try again later`, code: ErrorCodes.STORE }, log, {
        keepError: true,
      });
    }

    // The listing may be old: a record replayed or purged since is not run (a purged one has no data).
    const current = (await this.#resources.store.get(record.id)).find((r) => r.prefix === record.prefix);
    if (current?.state !== 'dead') {
      await idempotency.release(keys, this.#owner);
      return resultOf(record, current === undefined ? 'purged' : notDead(current.state));
    }
    record = current;
    const result = await this.#dispatch(record, deadlineMs - safetyMarginMs(this.#resources.visibilityMs));
    if (result.status === 'ok') {
      // The effect's marks first: a replay killed before the record changes finds them and runs nothing.
      await idempotency.markDone(keys);
      await this.#markReplayed(record, log);
      log.debug(`replayed ${record.id}`);
      return resultOf(record, 'replayed');
    }
    await idempotency.release(keys, this.#owner);
    // Stopped (a signal): the handler did not fail, the replay ended; the record stays as it was.
    if (this.#resources.signal?.aborted === true) return resultOf(record, 'skipped');
    const error =
      result.status === 'unstarted' ? { message: `handler ${record.handler} did not start (the replay was stopped)`, code: ErrorCodes.ABORTED } : result.error;
    return this.#failed(record, error, log);
  }

  /**
   * Claims the keys; while one is held by another owner, waits for it with backoff until the
   * deadline. `done`: the replay's key is done (its effect is recorded); `resolved`: the handler's
   * key was applied, not dead-lettered; `new`: ours to run.
   */
  async #claim(idempotency: IdempotencyStore, keys: string[], deadlineMs: number): Promise<ClaimState | 'resolved'> {
    let waitMs = WAIT_FIRST_MS;
    for (;;) {
      const states = (await idempotency.claim(keys, this.#owner, Math.max(1, deadlineMs - Date.now()))).states;
      const [handlerState, replayState, deadState] = states;
      if (replayState === 'done') {
        // Another replay did it; a claim of ours on the other keys would only block a worker.
        await idempotency.release(
          keys.filter((_, i) => states[i] === 'new'),
          this.#owner,
        );
        return 'done';
      }
      if (!states.includes('busy')) return handlerState === 'done' && deadState === 'new' ? 'resolved' : 'new';
      if (this.#resources.signal?.aborted === true || Date.now() + waitMs >= deadlineMs) return 'busy';
      await sleep(systemClock, waitMs, this.#resources.signal);
      waitMs = Math.min(WAIT_MAX_MS, waitMs * 2);
    }
  }

  #dispatch(record: StoredDeadLetter, deadlineMs: number): Promise<DispatchResult> {
    const ctx = {
      attempt: record.attempt + record.replayAttempts + 1,
      deliveryAttempt: record.deliveryAttempt ?? 1,
      generation: record.generation,
      workerId: this.#owner,
      leaseId: `replay:${record.id}`,
      leaseDeadlineMs: deadlineMs,
    };
    const signal = this.#resources.signal ?? new AbortController().signal;
    const job: DispatchJob = { handler: record.handler, event: record.event, ctx };
    if (this.#resources.transactionalHandlers?.has(record.handler) === true) {
      job.keys = [replayKey(record.handler, record.event.id)];
      job.keyPrefix = record.prefix;
    }
    return dispatchOnce(this.#resources.dispatcher, job, signal);
  }

  async #markReplayed(record: StoredDeadLetter, log: Logger): Promise<void> {
    // False when someone else changed it meanwhile (replayed or purged it): nothing left to do.
    if (!(await this.#resources.store.update(afterReplay(record), 'dead'))) log.debug('record changed meanwhile: left as it is');
  }

  async #failed(record: StoredDeadLetter, error: DispatchError, log: Logger, options: { keepError?: boolean } = {}): Promise<ReplayResult> {
    log.warn({ err: error }, `replay of ${record.id} failed: ${error.message}`);
    // A replay that never ran (a claim held elsewhere, a store down) leaves the record as it was.
    if (options.keepError !== true) {
      await this.#resources.store.update(afterFailedReplay(record, reportedError(error)), 'dead').catch((err: unknown) => {
        log.warn({ err }, `the new error of ${record.id} could not be recorded`);
      });
    }
    return { ...resultOf(record, 'failed'), error };
  }
}

/** What a replay reports for a record no longer `dead`. */
function notDead(state: StoredDeadLetter['state']): ReplayOutcome {
  return state === 'replayed' ? 'already-replayed' : state === 'resolved' ? 'resolved' : 'purged';
}

function resultOf(record: StoredDeadLetter, outcome: ReplayOutcome): ReplayResult {
  return { id: record.id, prefix: record.prefix, handler: record.handler, eventId: record.event.id, outcome };
}

/** The error as records keep it (no stack beyond what the handler's own error carried). */
function reportedError(error: DispatchError): StoredDeadLetter['error'] {
  return { message: error.message, ...(error.stack === undefined ? {} : { stack: error.stack }), ...(error.code === undefined ? {} : { code: error.code }) };
}

/**
 * Records grouped by prefix and subject, each group in stream order (sequence, then time): a
 * subject's events run in order in `run`, and a replay keeps that order.
 */
export function subjectChains(records: readonly StoredDeadLetter[]): StoredDeadLetter[][] {
  const chains = new Map<string, StoredDeadLetter[]>();
  for (const record of records) {
    const key = JSON.stringify([record.prefix, record.event.subject]);
    const chain = chains.get(key);
    if (chain === undefined) chains.set(key, [record]);
    else chain.push(record);
  }
  for (const chain of chains.values()) chain.sort(streamOrder);
  return [...chains.values()];
}

function streamOrder(a: StoredDeadLetter, b: StoredDeadLetter): number {
  const sa = toSequence(a.event.sequence);
  const sb = toSequence(b.event.sequence);
  if (sa !== undefined && sb !== undefined && sa !== sb) return sa < sb ? -1 : 1;
  return a.deadLetteredAt < b.deadLetteredAt ? -1 : a.deadLetteredAt > b.deadLetteredAt ? 1 : 0;
}

function toSequence(value: unknown): bigint | undefined {
  try {
    return typeof value === 'string' && /^\d+$/.test(value) ? BigInt(value) : undefined;
  } catch {
    return undefined;
  }
}
