import type { ConsumerApi, PullResult } from '../client/consumer-api.js';
import { isAbortError, isRetryable } from '../client/errors.js';
import { ErrorCodes, hasCode } from '../errors.js';
import { processBatch, type BatchContext } from './batch.js';
import type { PullStatusLabel } from './events.js';
import type { Readiness } from './readiness.js';
import type { Clock } from '../dispatch/run-handler.js';
import { backoffMs, sleepOn, withJitter } from './timing.js';

/** Waits of the pull loop, in ms. Every wait is abortable by the drain signal. */
export interface LoopTimings {
  /** First wait after a 204 (caught up); doubles up to idleMaxMs, reset by work. Default 100. */
  idleMinMs: number;
  /** Default 2000. */
  idleMaxMs: number;
  /** Wait while the consumer is paused (409). Default 2000. */
  pausedMs: number;
  /** 429 without Retry-After, 5xx and network errors: base and ceiling of exponential backoff. Defaults 200 / 30000. */
  errorBaseMs: number;
  errorMaxMs: number;
  /** 400/401/403/404: the configuration is wrong; retry slowly in case it is fixed. Default 15000. */
  configRetryMs: number;
}

export const DEFAULT_LOOP_TIMINGS: LoopTimings = {
  idleMinMs: 100,
  idleMaxMs: 2_000,
  pausedMs: 2_000,
  errorBaseMs: 200,
  errorMaxMs: 30_000,
  configRetryMs: 15_000,
};

export interface LoopContext extends BatchContext {
  api: ConsumerApi;
  limit: number;
  readiness: Readiness;
  timings: LoopTimings;
  /** What the loop's waits run on: the system clock, or a test's fake one. */
  clock: Clock;
  /** The loop reports whether its last pull found the consumer caught up (for --exit-when-idle). */
  onIdle(workerId: string, idle: boolean): void;
}

/** A status that retrying will not cure: the destination, credential or scope is wrong. */
function configProblem(err: unknown): string | undefined {
  const status = (err as { status?: unknown }).status;
  if (hasCode(err, ErrorCodes.AUTH) && !isRetryable(err)) {
    // The worker asks for scope read:events (worker/start.ts); an application without it is refused at the issuer.
    if ((err as { issuer?: { error?: unknown } }).issuer?.error === 'invalid_scope') return 'the token issuer refused scope read:events: the application (--client-id) must have it';
    return 'the token issuer refused the client credentials (check --client-id, --client-secret, --tenant, --auth-url)';
  }
  if (!hasCode(err, ErrorCodes.API)) return undefined;
  switch (status) {
    case 400:
      return 'pull answered 400: the destination is not a DURABLE_CONSUMER, or a pull option is out of range (check --destination, --limit, --visibility)';
    case 401:
      return 'pull answered 401 even with a fresh credential (check --api-key or the client credentials)';
    case 403:
      return 'pull answered 403: the credential lacks the read:events scope';
    case 404:
      return 'pull answered 404: no such event destination (check --destination and --tenant)';
    default:
      return undefined;
  }
}

function statusLabel(err: unknown): PullStatusLabel {
  const status = (err as { status?: unknown }).status;
  if (hasCode(err, ErrorCodes.API) && typeof status === 'number') return status >= 500 ? '5xx' : '4xx';
  return 'error';
}

/** What one cycle of the loop carries over to the next. */
interface LoopState {
  idleWaitMs: number;
  errorStreak: number;
  lastConfigProblem: string | undefined;
  pausedLogged: boolean;
}

/**
 * One pull loop (one workerId): pull, process the batch, ack, repeat. ONE batch at a time: it never
 * pulls while holding a lease (spec: pulling before acknowledging abandons the earlier batch).
 * Stops pulling when `drainSignal` aborts; returns once the batch in hand is acked.
 *
 * Each cycle is a call of its own: V8 does not move a suspended async function to optimised code,
 * so a loop body that runs for the life of the process would stay unoptimised (phase c, memory store,
 * in-process: 12.2-12.3 µs per event against 13.2 with the body inline; docs/benchmarks.md).
 */
export async function runPullLoop(ctx: LoopContext): Promise<void> {
  const state: LoopState = { idleWaitMs: ctx.timings.idleMinMs, errorStreak: 0, lastConfigProblem: undefined, pausedLogged: false };
  while (!ctx.drainSignal.aborted) {
    if ((await pullCycle(ctx, state)) === 'stop') break;
  }
}

/** One pull and what follows it: the batch processed and acked, or the wait its answer asks for. */
async function pullCycle(ctx: LoopContext, state: LoopState): Promise<'stop' | undefined> {
  const { api, drainSignal, timings, readiness, workerId } = ctx;
  const log = ctx.logger;
  const startedMs = Date.now();
  let result: PullResult;
  try {
    await api.ensureCredential(ctx.forceSignal);
    readiness.credentialObtained();
    // Not the drain signal: a pull aborted mid-flight could leave a lease behind on the server.
    result = await api.pull(ctx.destination, { limit: ctx.limit, visibilitySeconds: ctx.visibilitySeconds, workerId }, ctx.forceSignal);
  } catch (err) {
    if (ctx.forceSignal.aborted || isAbortError(err)) return 'stop';
    ctx.events.emit('pull:done', { workerId, status: statusLabel(err), eventCount: 0, durationMs: Date.now() - startedMs });
    ctx.onIdle(workerId, false);
    const problem = configProblem(err);
    if (problem !== undefined) {
      readiness.configError(workerId, problem);
      if (problem !== state.lastConfigProblem) log.error({ err }, `configuration error: ${problem}; retrying every ${Math.round(timings.configRetryMs / 1000)} s`);
      state.lastConfigProblem = problem;
      await sleepOn(ctx.clock, withJitter(timings.configRetryMs), drainSignal);
      return undefined;
    }
    state.errorStreak++;
    const retryAfterMs = (err as { retryAfterMs?: unknown }).retryAfterMs;
    const waitMs = typeof retryAfterMs === 'number' ? retryAfterMs : backoffMs(state.errorStreak, timings.errorBaseMs, timings.errorMaxMs);
    log.warn({ err, waitMs, errorStreak: state.errorStreak, retryable: isRetryable(err) }, 'pull failed: backing off');
    await sleepOn(ctx.clock, waitMs, drainSignal);
    return undefined;
  }

  state.errorStreak = 0;
  if (state.lastConfigProblem !== undefined) log.info('pull works again: configuration problem cleared');
  state.lastConfigProblem = undefined;
  readiness.configOk(workerId);
  const eventCount = result.status === 200 ? result.batch.events.length : 0;
  ctx.events.emit('pull:done', { workerId, status: String(result.status) as PullStatusLabel, eventCount, durationMs: Date.now() - startedMs });
  if (result.status !== 409) state.pausedLogged = false;

  switch (result.status) {
    case 200: {
      ctx.onIdle(workerId, false);
      state.idleWaitMs = timings.idleMinMs;
      const batch = result.batch;
      ctx.events.emit('batch:pulled', { workerId, leaseId: batch.leaseId, generation: batch.generation, attempt: batch.attempt, events: batch.events });
      await processBatch(ctx, batch, startedMs);
      break;
    }
    case 204:
      ctx.events.emit('caught-up', { workerId, at: Date.now() });
      ctx.onIdle(workerId, true);
      await sleepOn(ctx.clock, withJitter(state.idleWaitMs), drainSignal);
      state.idleWaitMs = Math.min(timings.idleMaxMs, state.idleWaitMs * 2);
      break;
    case 409:
      // Paused: acks are still accepted (spec), and we hold none here; just wait.
      ctx.onIdle(workerId, false);
      if (!state.pausedLogged) log.info('consumer is paused (409): waiting for it to resume');
      state.pausedLogged = true;
      await sleepOn(ctx.clock, withJitter(timings.pausedMs), drainSignal);
      break;
    case 429: {
      // 1,000 events leased and unacknowledged (spec): other workers hold the window.
      ctx.onIdle(workerId, false);
      state.errorStreak++;
      const waitMs = result.retryAfterMs ?? backoffMs(state.errorStreak, timings.errorBaseMs, timings.errorMaxMs);
      log.debug({ waitMs }, 'in-flight window full (429): backing off');
      await sleepOn(ctx.clock, waitMs, drainSignal);
      break;
    }
  }
  return undefined;
}
