import { describe, expect, it } from 'vitest';
import type { ResolvedLimits } from '../../src/handlers/limits-options.js';
import { busiestWindow } from '../../bench/limits/measure.js';
import { MemoryPermits } from '../../src/idempotency/memory-permits.js';
import { Limiter, type PermitResult } from '../../src/limits/limiter.js';
import { createFakeClock, type FakeClock } from '../../src/testing/clock.js';
import type { CloudEvent } from '../../src/types.js';

const runs = (events: CloudEvent[], ttlMs: number) => events.map((e) => ({ event: e, ttlMs }));
const event = (subject: string, n = 0): CloudEvent =>
  ({ id: `e${n}`, subject, type: 't', source: 's', specversion: '1.0', sequence: String(n), time: '', data: {} }) as CloudEvent;

function limiterWith(limits: ResolvedLimits, clock: FakeClock = createFakeClock()): { limiter: Limiter; clock: FakeClock } {
  const limiter = new Limiter(new MemoryPermits(clock), clock);
  limiter.add('h', limits);
  return { limiter, clock };
}

/**
 * Runs `events` through the limiter as the worker would: each asks, waits what the answer says,
 * asks again; returns the start times. Runs hold their concurrency permit for `holdMs`.
 */
async function drive(limiter: Limiter, clock: FakeClock, events: CloudEvent[], holdMs = 0): Promise<{ starts: number[]; maxInProgress: number }> {
  const starts: number[] = [];
  let inProgress = 0;
  let maxInProgress = 0;
  let pending = events.map((e) => ({ e }));
  const t0 = clock.now();
  while (pending.length > 0) {
    const answers: PermitResult[] = await limiter.take(
      'h',
      pending.map((p) => ({ event: p.e, ttlMs: 60_000 })),
    );
    const next: typeof pending = [];
    let soonestMs = Infinity;
    answers.forEach((answer, i) => {
      if (answer.granted) {
        starts.push(clock.now() - t0);
        maxInProgress = Math.max(maxInProgress, ++inProgress);
        clock.setTimeout(() => {
          inProgress--;
          void limiter.release(answer.permit);
        }, holdMs);
      } else {
        next.push(pending[i] as (typeof pending)[number]);
        soonestMs = Math.min(soonestMs, answer.waitMs);
      }
    });
    pending = next;
    if (pending.length > 0) await clock.advance(soonestMs);
    else await clock.advance(holdMs);
  }
  return { starts, maxInProgress };
}

describe('Limiter with the memory permits, on a fake clock', () => {
  it('rate: at most max starts in any window of per, and no slower than the pace', async () => {
    const { limiter, clock } = limiterWith({ adaptive: false, rate: { max: 40, perMs: 1_000 } });
    const { starts } = await drive(
      limiter,
      clock,
      Array.from({ length: 400 }, (_, i) => event(`s${i}`, i)),
    );
    expect(starts).toHaveLength(400);
    expect(busiestWindow(starts, 1_000)).toBe(40);
    // The store keeps each window 10 % longer (storedWindowMs): starts reach their handler a little late.
    expect(starts.at(-1)).toBeLessThanOrEqual(9 * 1_100 + 1);
  });

  it('concurrency: never more than N runs hold permits, and the others start when one ends', async () => {
    const { limiter, clock } = limiterWith({ adaptive: false, concurrency: 3 });
    const { starts, maxInProgress } = await drive(
      limiter,
      clock,
      Array.from({ length: 12 }, (_, i) => event(`s${i}`, i)),
      100,
    );
    expect(maxInProgress).toBe(3);
    expect(starts).toHaveLength(12);
    expect(starts.at(-1)).toBeLessThan(400);
  });

  it('a concurrency permit expires at its ttl when its run never releases it (its process died)', async () => {
    const clock = createFakeClock();
    const limiter = new Limiter(new MemoryPermits(clock), clock);
    limiter.add('h', { adaptive: false, concurrency: 1 });
    const [first] = await limiter.take('h', runs([event('a')], 1_000));
    expect(first?.granted).toBe(true);
    const [refused] = await limiter.take('h', runs([event('b')], 1_000));
    expect(refused).toMatchObject({ granted: false });
    await clock.advance(1_000);
    const [after] = await limiter.take('h', runs([event('b')], 1_000));
    expect(after?.granted).toBe(true);
  });

  it('perKey: each key its own rate; the handler rate over them all', async () => {
    const { limiter, clock } = limiterWith({
      adaptive: false,
      rate: { max: 10, perMs: 1_000 },
      perKey: { key: (e) => e.subject, rate: { max: 2, perMs: 1_000 } },
    });
    const answers = await limiter.take('h', runs([event('a', 1), event('a', 2), event('a', 3), event('b', 4), event('b', 5)], 60_000));
    expect(answers.map((a) => a.granted)).toEqual([true, true, false, true, true]);
    const more = await limiter.take(
      'h',
      runs(
        Array.from({ length: 10 }, (_, i) => event(`k${i}`, i)),
        60_000,
      ),
    );
    expect(more.filter((a) => a.granted)).toHaveLength(6);
    await clock.advance(1_100);
    expect((await limiter.take('h', runs([event('a', 3)], 60_000)))[0]?.granted).toBe(true);
  });

  it('a batch counts as its number of events: the events beyond the window wait', async () => {
    const { limiter } = limiterWith({ adaptive: false, rate: { max: 4, perMs: 1_000 } });
    const answers = await limiter.take(
      'h',
      runs(
        Array.from({ length: 6 }, (_, i) => event(`s${i}`, i)),
        60_000,
      ),
    );
    expect(answers.map((a) => a.granted)).toEqual([true, true, true, true, false, false]);
    expect(answers[4]).toEqual({ granted: false, waitMs: 1_100, paceMs: 275 });
  });

  it('a wait ends early when a run of the handler releases its permit here', async () => {
    const { limiter, clock } = limiterWith({ adaptive: false, concurrency: 1 });
    const [held] = await limiter.take('h', runs([event('a')], 60_000));
    let woken = false;
    const waiting = limiter.wait('h', 10_000).then(() => (woken = true));
    expect(limiter.view('h')?.waiting).toBe(1);
    if (held?.granted === true) await limiter.release(held.permit);
    await waiting;
    expect(woken).toBe(true);
    expect(clock.now()).toBe(createFakeClock().now());
    expect(limiter.view('h')?.waiting).toBe(0);
  });

  it('its view: the declared limits as data, the runs in progress from grant to release, an adaptive per-key rate by its lowest key', async () => {
    const { limiter } = limiterWith({ adaptive: true, concurrency: 3, perKey: { key: (e) => e.subject, rate: { max: 10, perMs: 1_000 } } });
    expect(limiter.view('h')).toEqual({
      declared: { adaptive: true, concurrency: 3, perKey: { rate: { max: 10, perMs: 1_000 } } },
      allowedPerSecond: undefined,
      perKeyAllowed: { keys: 0, lowestPerSecond: undefined },
      waiting: 0,
      inFlight: 0,
      throttles: 0,
    });
    const answers = await limiter.take('h', runs([event('a', 1), event('b', 2)], 60_000));
    expect(limiter.view('h')?.inFlight).toBe(2);
    limiter.throttled('h', event('a', 1));
    expect(limiter.view('h')).toMatchObject({ inFlight: 2, throttles: 1, perKeyAllowed: { keys: 2, lowestPerSecond: 8 } });
    for (const answer of answers) if (answer.granted) await limiter.release(answer.permit);
    expect(limiter.view('h')?.inFlight).toBe(0);
  });

  it('adaptive: a throttle lowers the allowed rate, windows that ran into it raise it again up to max', async () => {
    const { limiter, clock } = limiterWith({ adaptive: true, rate: { max: 100, perMs: 1_000 } });
    expect(limiter.view('h')?.allowedPerSecond).toBe(100);
    limiter.throttled('h', event('a'), 1_000);
    limiter.throttled('h', event('a'), 1_000); // the same overshoot: not cut twice
    expect(limiter.view('h')).toMatchObject({ allowedPerSecond: 80, throttles: 2 });
    const { starts } = await drive(
      limiter,
      clock,
      Array.from({ length: 1_000 }, (_, i) => event(`s${i}`, i)),
    );
    expect(starts).toHaveLength(1_000);
    expect(limiter.view('h')?.allowedPerSecond).toBe(100);
    expect(busiestWindow(starts, 1_000)).toBeLessThanOrEqual(100);
  });
});
