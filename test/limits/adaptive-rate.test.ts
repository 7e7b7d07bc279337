import { describe, expect, it } from 'vitest';
import { MemoryPermits } from '../../src/idempotency/memory-permits.js';
import { AdaptiveRate } from '../../src/limits/adaptive-rate.js';
import { Limiter } from '../../src/limits/limiter.js';
import { createFakeClock } from '../../src/testing/clock.js';
import type { CloudEvent } from '../../src/types.js';

const runs = (events: CloudEvent[], ttlMs: number) => events.map((e) => ({ event: e, ttlMs }));
const event = { id: 'e', subject: 's', type: 't' } as CloudEvent;

describe('AdaptiveRate', () => {
  it('without a max: slow start, then a cut to 80 % at the first throttle, then additive growth', async () => {
    const clock = createFakeClock();
    const rate = new AdaptiveRate(undefined, 1_000, clock);
    const seen: number[] = [];
    for (let second = 0; second < 4; second++) {
      seen.push(rate.max);
      rate.limited();
      await clock.advance(1_000);
    }
    expect(seen).toEqual([10, 20, 40, 80]);
    rate.throttled();
    expect(rate.max).toBe(128); // 160 * 0.8
    rate.limited();
    await clock.advance(1_000);
    expect(rate.max).toBe(136); // + 5 % of 160
  });

  it('does not grow in windows where nothing waited for it (demand below the rate)', async () => {
    const clock = createFakeClock();
    const rate = new AdaptiveRate(undefined, 1_000, clock);
    await clock.advance(10_000);
    expect(rate.max).toBe(10);
  });
});

/**
 * A downstream that answers 429 above `limit` calls in any 1 s window, driven by the limiter at a
 * demand above it: the done-when of the adaptive limits, on the fake clock (the bench measures it on
 * a real stub and a real worker).
 */
async function simulate(limiter: Limiter, clock: ReturnType<typeof createFakeClock>, seconds: number, limit: () => number) {
  const calls: { atMs: number; throttled: boolean }[] = [];
  const endMs = clock.now() + seconds * 1_000;
  while (clock.now() < endMs) {
    const [answer] = await limiter.take('h', runs([event], 60_000));
    if (answer?.granted !== true) {
      await clock.advance(answer?.waitMs ?? 1);
      continue;
    }
    const nowMs = clock.now();
    const inWindow = calls.filter((c) => c.atMs > nowMs - 1_000 && !c.throttled).length;
    const throttled = inWindow >= limit();
    calls.push({ atMs: nowMs, throttled });
    if (throttled) limiter.throttled('h', event, 1_000);
  }
  return calls;
}

describe('Limiter adaptive without a max, against a stub that throttles above 60 calls a second', () => {
  it('after 10 s: under 5 % throttled and at least 0.8 x 60 calls a second; climbs when the stub allows more', async () => {
    const clock = createFakeClock();
    const limiter = new Limiter(new MemoryPermits(clock), clock);
    limiter.add('h', { adaptive: true, rate: { max: undefined, perMs: 1_000 } });
    let limit = 60;
    const t0 = clock.now();
    const calls = await simulate(limiter, clock, 40, () => limit);
    const late = calls.filter((c) => c.atMs >= t0 + 10_000);
    const throttledShare = late.filter((c) => c.throttled).length / late.length;
    const okPerSecond = late.filter((c) => !c.throttled).length / 30;
    expect(throttledShare).toBeLessThan(0.05);
    expect(okPerSecond).toBeGreaterThanOrEqual(0.8 * 60);
    limit = 120;
    const after = await simulate(limiter, clock, 40, () => limit);
    const lastTen = after.filter((c) => c.atMs >= clock.now() - 10_000 && !c.throttled).length / 10;
    // Well above the old limit within 40 s (additive growth: 5 % of the rate at the last cut per window).
    expect(lastTen).toBeGreaterThanOrEqual(1.5 * 60);
  });
});
