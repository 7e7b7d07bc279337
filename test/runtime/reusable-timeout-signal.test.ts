import { afterEach, describe, expect, it, vi } from 'vitest';
import { ReusableTimeoutSignal } from '../../src/runtime/reusable-timeout-signal.js';

describe('ReusableTimeoutSignal', () => {
  afterEach(() => void vi.useRealTimers());

  it('aborts with its reason when the time is up, never after disarm, and a later arm is not born aborted', () => {
    vi.useFakeTimers();
    const timeouts = new ReusableTimeoutSignal();
    const first = timeouts.arm(1_000, 'too slow');
    vi.advanceTimersByTime(999);
    timeouts.disarm();
    vi.advanceTimersByTime(10_000);
    expect(first.aborted).toBe(false);

    const second = timeouts.arm(500, 'too slow');
    vi.advanceTimersByTime(499);
    expect(second.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(second.aborted).toBe(true);
    expect((second.reason as Error).message).toBe('too slow');
    timeouts.disarm();

    const third = timeouts.arm(500, 'too slow');
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
