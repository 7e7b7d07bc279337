import type { Clock } from './run-handler.js';

/**
 * One `abort` listener per signal, however many runs wait on it. A batch signal is watched by every
 * handler run of the batch; `addEventListener`/`removeEventListener` per run cost more than the
 * run itself with a fast handler (docs/benchmarks.md), a Set entry does not.
 */
const watchers = new WeakMap<AbortSignal, Set<(reason: unknown) => void>>();

/** Calls `onAbort` once when `signal` aborts (at once if it already has); returns the unsubscribe. */
export function whenAborted(signal: AbortSignal, onAbort: (reason: unknown) => void): () => void {
  if (signal.aborted) {
    onAbort(signal.reason);
    return noop;
  }
  let set = watchers.get(signal);
  if (set === undefined) {
    const fresh = new Set<(reason: unknown) => void>();
    set = fresh;
    watchers.set(signal, fresh);
    signal.addEventListener(
      'abort',
      () => {
        watchers.delete(signal);
        for (const callback of fresh) callback(signal.reason);
        fresh.clear();
      },
      { once: true },
    );
  }
  const callbacks = set;
  callbacks.add(onAbort);
  return () => callbacks.delete(onAbort);
}

function noop(): void {}

interface DeadlineEntry {
  callbacks: Set<() => void>;
  handle: unknown;
}

/** Per clock (tests run handlers on a fake one): deadline in ms -> the runs waiting for it. */
const deadlinesByClock = new WeakMap<Clock, Map<number, DeadlineEntry>>();

/**
 * Calls `callback` at `deadlineMs` on `clock`; returns the cancel. Every run of a batch has the same
 * lease deadline, so they share one timer instead of arming and clearing one each. An entry left
 * empty is cleared when the next deadline is registered (batches of one worker follow each other),
 * so the timers alive stay about one per batch in progress; an empty entry's timer is unref'd so it
 * never keeps a finished process alive.
 */
export function atDeadline(clock: Clock, deadlineMs: number, callback: () => void): () => void {
  let entries = deadlinesByClock.get(clock);
  if (entries === undefined) {
    entries = new Map();
    deadlinesByClock.set(clock, entries);
  }
  let entry = entries.get(deadlineMs);
  if (entry === undefined) {
    for (const [at, stale] of entries) {
      if (stale.callbacks.size > 0) continue;
      clock.clearTimeout(stale.handle);
      entries.delete(at);
    }
    const callbacks = new Set<() => void>();
    const owner = entries;
    const handle = clock.setTimeout(() => {
      owner.delete(deadlineMs);
      for (const fire of callbacks) fire();
      callbacks.clear();
    }, Math.max(0, deadlineMs - clock.now()));
    entry = { callbacks, handle };
    entries.set(deadlineMs, entry);
  }
  const { callbacks, handle } = entry as { callbacks: Set<() => void>; handle: { ref?: () => void; unref?: () => void } };
  if (callbacks.size === 0) handle.ref?.();
  callbacks.add(callback);
  return () => {
    if (callbacks.delete(callback) && callbacks.size === 0) handle.unref?.();
  };
}
