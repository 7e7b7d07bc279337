import { listenTo, type WorkerEmitter } from './worker-events.js';
import { BacklogAgeTracker } from './backlog.js';
import { LagTracker } from './lag.js';

/**
 * Where this process stands in the stream: its lag and the committed cursor (LagTracker) and the
 * backlog age (BacklogAgeTracker), fed from the worker's events. The metrics and the summary line
 * both report them; the worker makes one and gives it to both, so that each leased batch is scanned
 * once, not once per reader. Each reader made without one observes for itself.
 */
export interface StreamPosition {
  readonly lag: LagTracker;
  readonly backlog: BacklogAgeTracker;
  /** Stops listening to the event bus. */
  close(): void;
}

/** Starts observing `events`; `now` is the backlog age's clock (for tests; default Date.now). */
export function observeStreamPosition(events: WorkerEmitter, now: () => number = Date.now): StreamPosition {
  const lag = new LagTracker();
  const backlog = new BacklogAgeTracker(now);
  const close = listenTo(events, {
    'lease:pulled': (e) => {
      lag.observeEvents(e.events);
      backlog.observeBatch(e.events);
    },
    'ack:done': (e) => lag.observeAck(e.response, e.lastSequence),
    'caught-up': (e) => backlog.observeCaughtUp(e.at),
  });
  return { lag, backlog, close };
}

/**
 * A reader's position: `given` when its caller shares one (and closes it), else one observed for
 * this reader alone. `release` closes only the latter, so a reader never closes what it was lent.
 */
export function readerPosition(given: StreamPosition | undefined, events: WorkerEmitter, now?: () => number): { position: StreamPosition; release(): void } {
  if (given !== undefined) return { position: given, release: () => {} };
  const own = observeStreamPosition(events, now);
  return { position: own, release: () => own.close() };
}
