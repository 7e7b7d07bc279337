import type { Clock } from '../runtime/clock.js';

export type { Clock } from '../runtime/clock.js';

/**
 * A clock that moves only when told to: `runHandler(..., { clock })` arms the lease deadline on it,
 * and `await clock.advance(ms)` fires what falls due, so a deadline test takes no real time.
 */
export interface FakeClock extends Clock {
  /** Moves time forward by `ms`, firing due timers in order and letting promise callbacks run after each. */
  advance(ms: number): Promise<void>;
  /** Timers armed and not yet fired or cleared. */
  readonly pendingTimers: number;
}

interface Timer {
  id: number;
  atMs: number;
  callback: () => void;
}

/** Lets the handler's promise chains run (they resume on microtasks and on I/O turns). */
function flush(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Default start: a fixed instant, so test output is stable. */
const DEFAULT_START_MS = Date.UTC(2025, 0, 1);

export function createFakeClock(startMs: number = DEFAULT_START_MS): FakeClock {
  let nowMs = startMs;
  let nextId = 1;
  const timers = new Map<number, Timer>();
  return {
    now: () => nowMs,
    setTimeout(callback, ms) {
      const timer = { id: nextId++, atMs: nowMs + Math.max(0, ms), callback };
      timers.set(timer.id, timer);
      return timer.id;
    },
    clearTimeout(handle) {
      timers.delete(handle as number);
    },
    get pendingTimers() {
      return timers.size;
    },
    async advance(ms) {
      if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`advance: ms must be a finite number >= 0 (got ${ms})`);
      const targetMs = nowMs + ms;
      await flush();
      for (;;) {
        let due: Timer | undefined;
        for (const timer of timers.values()) if (timer.atMs <= targetMs && (due === undefined || timer.atMs < due.atMs)) due = timer;
        if (due === undefined) break;
        timers.delete(due.id);
        nowMs = due.atMs;
        due.callback();
        await flush();
      }
      nowMs = targetMs;
      await flush();
    },
  };
}
