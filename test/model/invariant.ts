import type { RunLine } from '../fixtures/model-handlers/_plan.js';

/**
 * The failure-handling invariant of the model tests, as one pure function over what a scenario left
 * behind: the runs the handlers recorded (test/fixtures/model-handlers/_plan.ts), the dead-letter
 * lines and the consumer's cursor. For every (event, handler) that should run:
 *
 * - it is dead-lettered iff the handler threw PermanentError on it or failed on it `maxAttempts`
 *   times, with that reason, listed once, carrying its attempts, first and last failure times and
 *   last error;
 * - no run after its ok run or after it was dead-lettered; failed runs never exceed maxAttempts;
 * - `ctx.attempt` of each run of a single-event handler = its earlier failed runs + 1;
 * - a retry waits: at least the backoff minimum after a failure, at least what a RetryLaterError
 *   asked for (capped by the backoff maximum);
 * - an event that is not dead-lettered has its effect (an ok run) exactly once;
 * - the committed cursor reached the head;
 * - with `order` (one process): a single-event handler sees a subject's events in stream order, each
 *   one's first run starting after the last run of every earlier event of that subject for that
 *   handler ended (docs/handlers.md, "Order and isolation"). Batch handlers get a subject's events in
 *   order within a call and are not checked here.
 *
 * A SIGKILL loosens it for the (event, handler) pairs in flight at the kill only (`tolerated`): the
 * last run of the killed process on such a pair may have lost its bookkeeping (its done mark, or the
 * count of its failure), so the pair passes if it passes strictly, or with that one run set aside
 * (not counted, and the runs after it numbered either way), with the dead-letter record written at
 * most twice.
 */

export interface Violation {
  rule: string;
  key?: string;
  detail: string;
}

/** A dead-letter line of a `file:` sink, as the worker wrote it (fields of later versions optional). */
export interface DeadLetterLine {
  handler: string;
  reason: string;
  event: { id: string };
  error: { message: string };
  /** The handler's attempt that dead-lettered it: its failed runs. */
  attempt?: number;
  firstFailedAt?: string;
  lastFailedAt?: string;
  updatedAt?: string;
}

export interface ModelOptions {
  maxAttempts: number;
  retryBackoffMinMs: number;
  retryBackoffMaxMs: number;
  /** Handlers whose runs come in batch calls: `ctx.attempt` is the call's, not checked per event. */
  batchHandlers: ReadonlySet<string>;
  /** Check the order per (handler, subject) (`Observed.stream` needed): one process, no kill. */
  order?: boolean;
}

export interface Observed {
  /** Event id -> the handlers that must run it. */
  expected: ReadonlyMap<string, readonly string[]>;
  runs: readonly RunLine[];
  deadLetters: readonly DeadLetterLine[];
  cursor: { committed: string | null; head: string | null };
  /** The events in stream order with their subjects (for the order rule). */
  stream?: readonly { id: string; subject: string }[];
  /** After a SIGKILL: the killed process and the `<handler>:<event id>` pairs in flight at the kill. */
  tolerated?: { pid: number; keys: ReadonlySet<string> };
}

/** Slack for comparing two wall-clock readings in ms (rounding of Date.now and ISO strings). */
const CLOCK_SLACK_MS = 2;

export const keyOf = (handler: string, eventId: string): string => `${handler}:${eventId}`;

function isFailure(run: RunLine): boolean {
  return run.outcome !== 'ok';
}

/** The checks of one (event, handler); `ghost`: the index of a run set aside (its bookkeeping lost in a kill). */
function checkKey(key: string, runs: readonly RunLine[], dead: readonly DeadLetterLine[], options: ModelOptions, ghost?: number): Violation[] {
  const out: Violation[] = [];
  const add = (rule: string, detail: string) => out.push({ rule, key, detail });
  const handler = key.slice(0, key.indexOf(':'));
  const counted = runs.filter((_, i) => i !== ghost);
  let failures = 0;
  let ended: 'ok' | 'permanent' | 'max-attempts' | undefined;
  let oks = 0;
  for (const [i, run] of counted.entries()) {
    const index = runs.indexOf(run);
    if (ended !== undefined) add('run-after-end', `run ${i + 1} (${run.outcome}, ctx.attempt ${run.attempt}) after it ended (${ended})`);
    if (!options.batchHandlers.has(handler)) {
      const want = failures + 1;
      // After a set-aside run, its failure may or may not have been counted by the worker.
      const ghostFailed = ghost !== undefined && index > ghost && isFailure(runs[ghost] as RunLine);
      const ok = run.attempt === want || (ghostFailed && run.attempt === want + 1);
      if (!ok) add('attempt-mismatch', `run ${i + 1}: ctx.attempt ${run.attempt}, ${failures} failed run(s) before it`);
    }
    const previous = runs[index - 1];
    if (previous !== undefined && isFailure(previous) && index - 1 !== ghost) {
      const waitedMs = run.startMs - previous.endMs;
      // A handler's own wait is honoured as asked (capped by the maximum), below the minimum too;
      // without one (or with 0, no opinion) the backoff's minimum applies.
      const askedMs =
        previous.outcome === 'retry-later' && (previous.afterMs ?? 0) > 0 ? Math.min(previous.afterMs as number, options.retryBackoffMaxMs) : undefined;
      const floorMs = askedMs ?? options.retryBackoffMinMs;
      if (waitedMs + CLOCK_SLACK_MS < floorMs) {
        add('retry-too-soon', `run ${i + 1} started ${waitedMs} ms after a ${previous.outcome} run (at least ${floorMs} ms expected)`);
      }
    }
    if (run.outcome === 'ok') {
      oks++;
      ended ??= 'ok';
    } else {
      failures++;
      if (run.outcome === 'permanent') ended ??= 'permanent';
      else if (failures >= options.maxAttempts) ended ??= 'max-attempts';
    }
  }
  if (failures > options.maxAttempts) add('too-many-failures', `${failures} failed runs (max attempts ${options.maxAttempts})`);
  const deadExpected = ended === 'permanent' || ended === 'max-attempts';
  const maxRecords = ghost === undefined ? 1 : 2;
  if (dead.length > maxRecords) add('dead-letter-repeated', `${dead.length} dead-letter lines`);
  if (dead.length === 0) {
    if (deadExpected) add('dead-letter-missing', `ended ${ended} after ${failures} failed run(s), no dead-letter record`);
    else if (oks === 0) add('effect-missing', `no ok run and no dead letter (${counted.length} run(s), ${failures} failed)`);
  } else {
    if (!deadExpected) {
      const why = oks > 0 ? 'it also ran ok' : `only ${failures} failed run(s), no PermanentError`;
      add('dead-letter-without-cause', `dead-lettered (${dead.map((d) => d.reason).join(', ')}) but ${why}`);
    }
    for (const record of dead) {
      const found = recordViolations(record, counted, ended, ghost !== undefined);
      // A record the set-aside run wrote itself, before the kill lost its done mark: it tells the
      // failures up to that run, so it is read against those.
      const upToGhost = ghost === undefined ? [] : runs.slice(0, ghost + 1);
      const ghostEnded = upToGhost.at(-1)?.outcome === 'permanent' ? 'permanent' : 'max-attempts';
      const byGhost = upToGhost.some(isFailure) ? recordViolations(record, upToGhost, ghostEnded, true) : found;
      for (const { rule, detail } of byGhost.length < found.length ? byGhost : found) add(rule, detail);
    }
  }
  if (oks > 1) add('effect-repeated', `${oks} ok runs`);
  if (deadExpected && oks > 0) add('effect-after-dead-letter', `dead-lettered and ${oks} ok run(s)`);
  return out;
}

/** What is wrong in a dead-letter `record` of the failed runs among `counted`; `loose`: a kill may have lost one run's bookkeeping. */
function recordViolations(record: DeadLetterLine, counted: readonly RunLine[], ended: string | undefined, loose: boolean): { rule: string; detail: string }[] {
  const out: { rule: string; detail: string }[] = [];
  const add = (rule: string, detail: string) => out.push({ rule, detail });
  if ((ended === 'permanent' || ended === 'max-attempts') && record.reason !== ended) add('dead-letter-reason', `reason ${record.reason}, expected ${ended}`);
  const failed = counted.filter(isFailure);
  const first = failed[0];
  const last = failed.at(-1);
  if (last === undefined || first === undefined) return out;
  const attemptsOk = record.attempt === failed.length || (loose && record.attempt === failed.length + 1);
  if (!attemptsOk) add('dead-letter-attempts', `record attempt ${record.attempt ?? '(none)'}, ${failed.length} failed run(s)`);
  if (record.error?.message !== last.message && !loose) add('dead-letter-error', `record error "${record.error?.message}", last failure "${last.message}"`);
  const firstMs = record.firstFailedAt === undefined ? NaN : Date.parse(record.firstFailedAt);
  const lastMs = record.lastFailedAt === undefined ? NaN : Date.parse(record.lastFailedAt);
  // The worker notes a failure after the run ends and before the next run starts.
  const second = failed[1];
  if (!(firstMs + CLOCK_SLACK_MS >= first.startMs && (second === undefined || loose || firstMs <= second.startMs + CLOCK_SLACK_MS))) {
    add(
      'dead-letter-times',
      `firstFailedAt ${record.firstFailedAt ?? '(none)'}: first failed run ${new Date(first.startMs).toISOString()}..${new Date(first.endMs).toISOString()}`,
    );
  }
  // A record written before a kill and again after it: the first one's last failure is the set-aside run.
  if (!(lastMs + CLOCK_SLACK_MS >= (loose ? first.startMs : last.startMs) && lastMs + CLOCK_SLACK_MS >= firstMs)) {
    add('dead-letter-times', `lastFailedAt ${record.lastFailedAt ?? '(none)'}: last failed run started ${new Date(last.startMs).toISOString()}`);
  }
  return out;
}

/** Every violation of the invariant in `observed` (none: it holds). */
export function checkInvariant(observed: Observed, options: ModelOptions): Violation[] {
  const out: Violation[] = [];
  const runsByKey = new Map<string, RunLine[]>();
  for (const run of observed.runs) {
    const key = keyOf(run.handler, run.eventId);
    const list = runsByKey.get(key);
    if (list === undefined) runsByKey.set(key, [run]);
    else list.push(run);
  }
  const deadByKey = new Map<string, DeadLetterLine[]>();
  // Only a worker's writes: a line with `updatedAt` is a later change (replay, purge) of a record.
  for (const line of observed.deadLetters.filter((l) => l.updatedAt === undefined)) {
    const key = keyOf(line.handler, line.event.id);
    const list = deadByKey.get(key);
    if (list === undefined) deadByKey.set(key, [line]);
    else list.push(line);
  }
  const expectedKeys = new Set<string>();
  for (const [eventId, handlers] of observed.expected) for (const handler of handlers) expectedKeys.add(keyOf(handler, eventId));
  for (const key of runsByKey.keys())
    if (!expectedKeys.has(key)) out.push({ rule: 'unexpected-run', key, detail: 'a handler ran on an event it does not match' });
  for (const key of deadByKey.keys())
    if (!expectedKeys.has(key)) out.push({ rule: 'unexpected-dead-letter', key, detail: 'dead-lettered for a handler that does not match it' });

  for (const key of expectedKeys) {
    // Runs of one pair never overlap, so file order is time order; sort anyway (several files, processes).
    const runs = (runsByKey.get(key) ?? []).slice().sort((a, b) => a.startMs - b.startMs);
    const dead = deadByKey.get(key) ?? [];
    const strict = checkKey(key, runs, dead, options);
    if (strict.length === 0) continue;
    const tolerated = observed.tolerated;
    if (tolerated !== undefined && tolerated.keys.has(key)) {
      const ghost = runs.map((run) => run.pid).lastIndexOf(tolerated.pid);
      const loose = ghost >= 0 ? checkKey(key, runs, dead, options, ghost) : strict;
      // Report the reading that explains more of what happened.
      out.push(...(loose.length < strict.length ? loose : strict));
      continue;
    }
    out.push(...strict);
  }
  const { committed, head } = observed.cursor;
  if (committed !== head) out.push({ rule: 'cursor-behind', detail: `committed ${committed}, head ${head}` });
  if (options.order === true && observed.stream !== undefined) out.push(...orderViolations(observed, runsByKey, options));
  return out;
}

/** Where a handler's run of an event started before the last run of an earlier event of its subject ended. */
function orderViolations(observed: Observed, runsByKey: ReadonlyMap<string, readonly RunLine[]>, options: ModelOptions): Violation[] {
  const out: Violation[] = [];
  // (handler, subject) -> when the last run of the events seen so far ended, and which event that was.
  const lastEnd = new Map<string, { endMs: number; eventId: string }>();
  for (const { id, subject } of observed.stream ?? []) {
    for (const handler of observed.expected.get(id) ?? []) {
      if (options.batchHandlers.has(handler)) continue;
      const runs = runsByKey.get(keyOf(handler, id));
      if (runs === undefined || runs.length === 0) continue;
      const chain = `${handler}\u0000${subject}`;
      const firstStartMs = Math.min(...runs.map((r) => r.startMs));
      const before = lastEnd.get(chain);
      if (before !== undefined && firstStartMs + CLOCK_SLACK_MS < before.endMs) {
        out.push({
          rule: 'order',
          key: keyOf(handler, id),
          detail: `first run started ${before.endMs - firstStartMs} ms before the last run of the earlier ${before.eventId} of subject ${subject} ended`,
        });
      }
      const endMs = Math.max(...runs.map((r) => r.endMs));
      if (before === undefined || endMs > before.endMs) lastEnd.set(chain, { endMs, eventId: id });
    }
  }
  return out;
}

/** Rules in the order a reader wants them: lost or wrongly dead-lettered events first. */
const RULE_ORDER = [
  'cursor-behind',
  'dead-letter-without-cause',
  'effect-missing',
  'dead-letter-missing',
  'effect-repeated',
  'effect-after-dead-letter',
  'run-after-end',
  'order',
  'too-many-failures',
  'attempt-mismatch',
  'dead-letter-reason',
  'dead-letter-repeated',
  'dead-letter-attempts',
  'dead-letter-times',
  'dead-letter-error',
  'retry-too-soon',
];

/** Violations grouped by rule: a count and a few examples each, for a failure message. */
export function describeViolations(violations: readonly Violation[], examples = 4): string {
  const byRule = new Map<string, Violation[]>(RULE_ORDER.map((rule) => [rule, []]));
  for (const v of violations) byRule.set(v.rule, [...(byRule.get(v.rule) ?? []), v]);
  const lines: string[] = [];
  for (const [rule, list] of byRule) {
    if (list.length === 0) continue;
    lines.push(`${rule}: ${list.length}`);
    for (const v of list.slice(0, examples)) lines.push(`  ${v.key ?? ''} ${v.detail}`.trimEnd());
  }
  return lines.join('\n');
}
