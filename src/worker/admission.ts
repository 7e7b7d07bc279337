import type { LoadedHandler } from '../handlers/loader.js';
import type { Blocked } from './breakers.js';
import { runWait } from './deferral.js';
import type { LeaseView } from './lease-view.js';

/**
 * Whether event `index` of `lease` may start now as a whole (a store without deferred runs: the
 * event waits in its lease): undefined when it may (a half-open breaker takes one run as its probe);
 * else what holds it back: a retry time the store keeps for one of its handlers (a redelivery), or
 * an open breaker. `positions`: the runs a retry in the lease runs (undefined: every run of its route).
 * With deferred runs each run decides for itself (deferral.ts `runWait`): the event always starts.
 */
export function admitEvent(lease: LeaseView, index: number, positions: readonly number[] | undefined, nowMs: number): Blocked | undefined {
  if (lease.context.deferred !== undefined) return undefined;
  const route = lease.routes[index] ?? [];
  const first = lease.keyStart[index] as number;
  const failures = lease.failures;
  if (failures !== undefined && positions === undefined) {
    for (let j = 0; j < route.length; j++) {
      const history = failures[first + j];
      if (history !== undefined && history.retryAtMs > nowMs && lease.claims[first + j] === 'new')
        return { reason: 'retry', handler: (route[j] as LoadedHandler).name, untilMs: history.retryAtMs };
    }
  }
  const breakers = lease.context.breakers;
  // Every breaker closed (the usual case): nothing to look up, nothing to allocate.
  if (breakers.allClosed) return undefined;
  if (route.length === 1) return breakers.admit([(route[0] as LoadedHandler).name], nowMs);
  return breakers.admit(
    (positions ?? route.map((_, j) => first + j)).map((k) => (route[k - first] as LoadedHandler).name),
    nowMs,
  );
}

/** The failures the store counted for `handler`'s run on event `index` before the lease. */
export function failuresBefore(lease: LeaseView, index: number, handler: string): number {
  const route = lease.routes[index] ?? [];
  const first = lease.keyStart[index] as number;
  for (let j = 0; j < route.length; j++) if ((route[j] as LoadedHandler).name === handler) return lease.failures?.[first + j]?.failures ?? 0;
  return 0;
}

/**
 * The one handler of event `index` whose run may be chained on the previous event's run
 * (LeaseEvent.chainOn), or undefined: only one single-event handler without limits, whose claim is
 * new with no failures behind it, whose breaker is closed and whose run need not wait, in a lease
 * that may start events, with tracing off (a process span measures the handler's run, not its wait).
 */
export function chainableHandler(lease: LeaseView, index: number, subject: string): LoadedHandler | undefined {
  const { context } = lease;
  if (!lease.claimed || lease.stopped || lease.dispatch.startAfter === undefined || context.tracer?.enabled === true) return undefined;
  if (context.clock.now() >= lease.deadlineMs) return undefined;
  const route = lease.routes[index] ?? [];
  const handler = route[0];
  const k = lease.keyStart[index] as number;
  if (route.length !== 1 || handler === undefined || handler.batch !== undefined || handler.limits !== undefined) return undefined;
  if (lease.claims[k] !== 'new' || lease.failures?.[k] !== undefined || !context.breakers.isClosed(handler.name)) return undefined;
  if (context.deferred !== undefined && runWait(lease, k, handler, subject, context.clock.now()) !== undefined) return undefined;
  return handler;
}
