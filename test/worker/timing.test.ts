import { afterEach, describe, expect, it, vi } from 'vitest';
import { ReusableTimeoutSignal } from '../../src/worker/timing.js';

describe('ReusableTimeoutSignal', () => {
  afterEach(() => void vi.useRealTimers());

  it('hands out the same signal while none of its timeouts fired, and a fresh one after', () => {
    vi.useFakeTimers();
    const timeouts = new ReusableTimeoutSignal();
    const first = timeouts.arm(1_000, 'too slow');
    vi.advanceTimersByTime(999);
    timeouts.disarm();
    vi.advanceTimersByTime(10_000);
    expect(first.aborted).toBe(false);

    const second = timeouts.arm(500, 'too slow');
    expect(second).toBe(first);
    vi.advanceTimersByTime(500);
    expect(second.aborted).toBe(true);
    expect((second.reason as Error).message).toBe('too slow');
    timeouts.disarm();

    const third = timeouts.arm(500, 'too slow');
    expect(third).not.toBe(second);
    expect(third.aborted).toBe(false);
  });

  it('a new arm replaces the timer of the last one', () => {
    vi.useFakeTimers();
    const timeouts = new ReusableTimeoutSignal();
    timeouts.arm(100, 'first');
    const signal = timeouts.arm(1_000, 'second');
    vi.advanceTimersByTime(500);
    expect(signal.aborted).toBe(false);
    vi.advanceTimersByTime(500);
    expect((signal.reason as Error).message).toBe('second');
  });
});
