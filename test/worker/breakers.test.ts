import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import pino from 'pino';
import { Breakers } from '../../src/worker/breakers.js';
import type { BreakerChange } from '../../src/observability/worker-events.js';
import { retryDelayMs } from '../../src/worker/retry-delay.js';

/** The timing math of failure handling: the breakers' states and the backoff (fake timers; the worker tests run them for real). */
describe('Breakers', () => {
  const silent = pino({ level: 'silent' });
  let changes: BreakerChange[];
  const options: { enabled: boolean; failureRatio: number; window: number; cooldownMs: number; windowMs?: number } = {
    enabled: true,
    failureRatio: 0.5,
    window: 4,
    cooldownMs: 1_000,
  };

  beforeEach(() => {
    vi.useFakeTimers();
    changes = [];
  });
  afterEach(() => vi.useRealTimers());

  const make = (overrides: Partial<typeof options> = {}) => new Breakers(['a', 'b'], { ...options, ...overrides }, silent, (change) => changes.push(change));

  it('opens once the time window holds the fewest runs weighed and fails at least the ratio, probes after the cool-down, closes on a good probe', () => {
    const breakers = make();
    for (const verdict of ['failed', 'ok', 'ok'] as const) breakers.record('a', verdict);
    expect(breakers.state('a')).toBe('closed'); // three runs: fewer than the four weighed at least
    breakers.record('a', 'failed'); // four runs in the time window: 2 of 4 failed, the ratio
    expect(breakers.state('a')).toBe('open');
    expect(changes.map((c) => [c.handler, c.state])).toEqual([['a', 'open']]);
    const now = Date.now();
    expect(breakers.admit(['a'], now)).toEqual({ reason: 'breaker', handler: 'a', untilMs: now + 1_000 });
    expect(breakers.admit(['b'], now)).toBeUndefined();
    expect(breakers.allOpen).toBe(false);

    vi.advanceTimersByTime(1_000);
    expect(breakers.state('a')).toBe('half-open');
    expect(breakers.admit(['a'], Date.now())).toBeUndefined(); // the probe
    expect(breakers.admit(['a'], Date.now())?.reason).toBe('breaker'); // one at a time
    breakers.record('a', 'ok');
    expect(breakers.state('a')).toBe('closed');
    expect(changes.map((c) => c.state)).toEqual(['open', 'half-open', 'closed']);
  });

  it('a failed probe opens it for another cool-down; a probe given back unrun lets another event probe', () => {
    const breakers = make({ window: 2, failureRatio: 1 });
    breakers.record('a', 'failed');
    breakers.record('a', 'failed');
    vi.advanceTimersByTime(1_000);
    expect(breakers.admit(['a'], Date.now())).toBeUndefined();
    breakers.record('a', 'none');
    expect(breakers.state('a')).toBe('half-open');
    expect(breakers.admit(['a'], Date.now())).toBeUndefined();
    breakers.record('a', 'failed');
    expect(breakers.state('a')).toBe('open');
    expect(changes.map((c) => c.state)).toEqual(['open', 'half-open', 'half-open', 'open']);
  });

  it('says when every handler is open (nothing worth pulling), and runs that ended before it opened change nothing', () => {
    const breakers = make({ window: 2, failureRatio: 1 });
    for (const handler of ['a', 'b']) for (let i = 0; i < 2; i++) breakers.record(handler, 'failed');
    expect(breakers.allOpen).toBe(true);
    breakers.record('a', 'ok'); // a run that started before it opened
    expect(breakers.state('a')).toBe('open');
    vi.advanceTimersByTime(1_000);
    expect(breakers.allOpen).toBe(false);
    breakers.close();
  });

  it('weighs only the runs of its time window: old failures leave it', () => {
    const breakers = make({ window: 4, failureRatio: 0.5, windowMs: 10_000 });
    breakers.record('a', 'failed');
    breakers.record('a', 'failed');
    vi.advanceTimersByTime(11_000); // both failures left the window
    breakers.record('a', 'ok');
    breakers.record('a', 'ok');
    breakers.record('a', 'ok');
    breakers.record('a', 'failed');
    expect(breakers.state('a')).toBe('closed'); // 1 of 4 in the window
    breakers.record('a', 'failed');
    expect(breakers.state('a')).toBe('closed'); // 2 of 5
    breakers.record('a', 'failed');
    expect(breakers.state('a')).toBe('open'); // 3 of 6: the ratio
  });

  it("'none' (RetryLaterError, PermanentError) weighs nothing; failures open it at the ratio", () => {
    const breakers = make({ window: 4, failureRatio: 0.5 });
    for (let i = 0; i < 20; i++) breakers.record('a', 'none');
    expect(breakers.state('a')).toBe('closed');
    for (let i = 0; i < 4; i++) breakers.record('a', 'ok');
    breakers.record('a', 'failed');
    expect(breakers.state('a')).toBe('closed'); // 1 of 5
    for (let i = 0; i < 3; i++) breakers.record('a', 'failed');
    expect(breakers.state('a')).toBe('open'); // 4 of 8
  });

  it('--no-breaker: nothing is ever held back', () => {
    const breakers = make({ enabled: false, window: 2, failureRatio: 0.5 });
    for (let i = 0; i < 10; i++) breakers.record('a', 'failed');
    expect(breakers.admit(['a'], Date.now())).toBeUndefined();
    expect(breakers.isClosed('a')).toBe(true);
    expect(changes).toEqual([]);
  });
});

describe('retryDelayMs', () => {
  const backoff = { minMs: 1_000, maxMs: 60_000 };

  it('doubles from the minimum, each wait up to a quarter longer, never above the maximum', () => {
    expect([1, 2, 3, 4].map((failures) => retryDelayMs(failures, { message: 'x' }, backoff, () => 0))).toEqual([1_000, 2_000, 4_000, 8_000]);
    expect([1, 2, 3, 4].map((failures) => retryDelayMs(failures, { message: 'x' }, backoff, () => 0.999))).toEqual([1_250, 2_500, 4_999, 9_998]);
    expect(retryDelayMs(7, { message: 'x' }, backoff, () => 0.999)).toBe(60_000);
    expect(retryDelayMs(1_000, { message: 'x' }, backoff, () => 0)).toBe(60_000);
  });

  it("honours the handler's own wait, capped by the maximum; 0 means no opinion", () => {
    expect(retryDelayMs(1, { message: 'x', retryAfterMs: 5_000 }, backoff, () => 0)).toBe(5_000);
    expect(retryDelayMs(1, { message: 'x', retryAfterMs: 3_600_000 }, backoff, () => 0)).toBe(60_000);
    expect(retryDelayMs(2, { message: 'x', retryAfterMs: 0 }, backoff, () => 0)).toBe(2_000);
  });
});
