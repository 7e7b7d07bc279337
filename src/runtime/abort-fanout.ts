import type { Clock } from './clock.js';

/** What `whenAborted` and `atDeadline` return: `cancel()` drops the callback (idempotent). */
export interface Watch {
  cancel(): void;
}

/**
 * One callback waiting on a shared trigger, linked into that trigger's list. Every handler run of a
 * batch waits on the batch signal and the lease deadline: with a Set per trigger, each wait hashed
 * a fresh closure and grows then shrinks the Set, more CPU and garbage per run than a no-op
 * handler costs. Linking and unlinking a node costs neither.
 */
class Waiter implements Watch {
  prev: Waiter | undefined = undefined;
  next: Waiter | undefined = undefined;
  list: WaiterList | undefined;
  readonly callback: (reason: unknown) => void;

  constructor(list: WaiterList, callback: (reason: unknown) => void) {
    this.list = list;
    this.callback = callback;
  }

  cancel(): void {
    this.list?.remove(this);
  }
}

class WaiterList {
  head: Waiter | undefined = undefined;
  tail: Waiter | undefined = undefined;
  size = 0;
  /** Called when the list becomes empty or stops being empty. */
  readonly onOccupied: ((occupied: boolean) => void) | undefined;

  constructor(onOccupied?: (occupied: boolean) => void) {
    this.onOccupied = onOccupied;
  }

  add(callback: (reason: unknown) => void): Waiter {
    const waiter = new Waiter(this, callback);
    if (this.tail === undefined) this.head = waiter;
    else {
      this.tail.next = waiter;
      waiter.prev = this.tail;
    }
    this.tail = waiter;
    if (++this.size === 1) this.onOccupied?.(true);
    return waiter;
  }

  remove(waiter: Waiter): void {
    if (waiter.prev === undefined) this.head = waiter.next;
    else waiter.prev.next = waiter.next;
    if (waiter.next === undefined) this.tail = waiter.prev;
    else waiter.next.prev = waiter.prev;
    waiter.prev = waiter.next = waiter.list = undefined;
    if (--this.size === 0) this.onOccupied?.(false);
  }

  /**
   * Calls every callback once, in the order they were added; the list is left empty. One at a time
   * from the head, so that a callback may cancel a later waiter (it is then skipped).
   */
  fire(reason: unknown): void {
    for (let waiter = this.head; waiter !== undefined; waiter = this.head) {
      this.remove(waiter);
      waiter.callback(reason);
    }
  }
}

/** One `abort` listener per signal, however many runs wait on it. */
const watchers = new WeakMap<AbortSignal, WaiterList>();
/**
 * The list last watched: a batch's runs watch the same signal one after another, and finding the
 * list in the WeakMap for each was one of three hash lookups per handler run. Only reached while
 * the signal has not aborted, so it is the list still registered.
 */
let lastWatched: { signal: AbortSignal; list: WaiterList } | undefined;

const DONE: Watch = Object.freeze({ cancel() {} });

/** Calls `onAbort` once when `signal` aborts (at once if it already has). */
export function whenAborted(signal: AbortSignal, onAbort: (reason: unknown) => void): Watch {
  if (signal.aborted) {
    onAbort(signal.reason);
    return DONE;
  }
  if (lastWatched?.signal === signal) return lastWatched.list.add(onAbort);
  let list = watchers.get(signal);
  if (list === undefined) {
    const fresh = new WaiterList();
    list = fresh;
    watchers.set(signal, fresh);
    signal.addEventListener(
      'abort',
      () => {
        watchers.delete(signal);
        fresh.fire(signal.reason);
      },
      { once: true },
    );
  }
  lastWatched = { signal, list };
  return list.add(onAbort);
}

interface DeadlineEntry {
  clock: Clock;
  deadlineMs: number;
  list: WaiterList;
  handle: unknown;
  /** Taken out of its clock's map: its timer fired or was cleared. */
  removed: boolean;
}

/** Per clock (tests run handlers on a fake one): deadline in ms -> the runs waiting for it. */
const deadlinesByClock = new WeakMap<Clock, Map<number, DeadlineEntry>>();
let lastDeadline: DeadlineEntry | undefined;

/**
 * Calls `callback` at `deadlineMs` on `clock`. Every run of a batch has the same lease deadline, so
 * they share one timer instead of arming and clearing one each. An entry left empty is cleared when
 * the next deadline is registered (batches of one worker follow each other), so the timers alive
 * stay about one per lease in flight; an empty entry's timer is unref'd so it never keeps a
 * finished process alive.
 */
export function atDeadline(clock: Clock, deadlineMs: number, callback: () => void): Watch {
  // The runs of a batch share its deadline and come one after another: the entry last used is the
  // one they need, without the two lookups below.
  const last = lastDeadline;
  if (last !== undefined && last.clock === clock && last.deadlineMs === deadlineMs && !last.removed) return last.list.add(callback);
  let entries = deadlinesByClock.get(clock);
  if (entries === undefined) {
    entries = new Map();
    deadlinesByClock.set(clock, entries);
  }
  let entry = entries.get(deadlineMs);
  if (entry === undefined) {
    for (const [at, stale] of entries) {
      if (stale.list.size > 0) continue;
      clock.clearTimeout(stale.handle);
      stale.removed = true;
      entries.delete(at);
    }
    const owner = entries;
    const handle = clock.setTimeout(
      () => {
        fresh.removed = true;
        owner.delete(deadlineMs);
        list.fire(undefined);
      },
      Math.max(0, deadlineMs - clock.now()),
    ) as { ref?: () => void; unref?: () => void };
    const list = new WaiterList((occupied) => (occupied ? handle.ref?.() : handle.unref?.()));
    const fresh: DeadlineEntry = { clock, deadlineMs, list, handle, removed: false };
    entry = fresh;
    entries.set(deadlineMs, fresh);
  }
  lastDeadline = entry;
  return entry.list.add(callback);
}
