import { describe, expect, it } from 'vitest';
import type { ResolvedLimits } from '../../src/handlers/limits-options.js';
import { MemoryPermits } from '../../src/idempotency/memory-permits.js';
import type { PermitStore } from '../../src/idempotency/permits.js';
import { Limiter } from '../../src/limits/limiter.js';
import { RunGate, type Admission } from '../../src/limits/run-gate.js';
import { createFakeClock } from '../../src/testing/clock.js';
import type { CloudEvent } from '../../src/types.js';

const event = (n: number) => ({ id: `e${n}`, subject: `s${n}`, type: 't' }) as CloudEvent;

function gateWith(limits: ResolvedLimits, maxInLeaseWaitMs?: number) {
  const clock = createFakeClock();
  const memory = new MemoryPermits(clock);
  const calls: number[] = [];
  const counting: PermitStore = { scope: 'process', take: (asks) => (calls.push(asks.length), memory.take(asks)), release: (t, c) => memory.release(t, c) };
  const limiter = new Limiter(counting, clock);
  limiter.add('h', limits);
  return { gate: new RunGate(limiter, { clock, holdBackMs: 2_500, ...(maxInLeaseWaitMs === undefined ? {} : { maxInLeaseWaitMs }) }), clock, calls, limiter };
}

describe('RunGate', () => {
  it('asks once per turn for the runs of a handler; a wait that fits the lease is spent in it', async () => {
    const { gate, clock, calls } = gateWith({ adaptive: false, rate: { max: 2, perMs: 1_000 } });
    const signal = new AbortController().signal;
    const deadlineMs = clock.now() + 10_000;
    const started: number[] = [];
    const admissions = [0, 1, 2].map((n) =>
      gate.admit({ handler: 'h', event: event(n), deadlineMs, signal }).then((a) => {
        started.push(clock.now());
        return a;
      }),
    );
    await clock.advance(0);
    expect(calls).toEqual([3]);
    expect(started).toHaveLength(2);
    await clock.advance(1_100);
    const all = await Promise.all(admissions);
    expect(all.map((a) => a.kind)).toEqual(['start', 'start', 'start']);
    expect(started[2]! - started[0]!).toBe(1_100);
  });

  it('a wait longer than the lease can hold comes back as later, with its time; a stopped lease as stopped', async () => {
    const { gate, clock } = gateWith({ adaptive: false, rate: { max: 1, perMs: 60_000 } });
    const controller = new AbortController();
    const first = await gate.admit({ handler: 'h', event: event(0), deadlineMs: clock.now() + 10_000, signal: controller.signal });
    expect(first.kind).toBe('start');
    const second = await gate.admit({ handler: 'h', event: event(1), deadlineMs: clock.now() + 10_000, signal: controller.signal });
    expect(second).toEqual({ kind: 'later', retryAtMs: clock.now() + 60_100 });
    controller.abort();
    expect(await gate.admit({ handler: 'h', event: event(2), deadlineMs: clock.now() + 10_000, signal: controller.signal })).toEqual({ kind: 'stopped' });
  });

  it('a concurrency wait ends when a run ends here, and a RetryLaterError lowers an adaptive rate', async () => {
    const { gate, clock, limiter } = gateWith({ adaptive: true, rate: { max: 50, perMs: 1_000 }, concurrency: 1 });
    const signal = new AbortController().signal;
    const deadlineMs = clock.now() + 10_000;
    const first = (await gate.admit({ handler: 'h', event: event(0), deadlineMs, signal })) as Extract<Admission, { kind: 'start' }>;
    let second: Admission | undefined;
    void gate.admit({ handler: 'h', event: event(1), deadlineMs, signal }).then((a) => (second = a));
    await clock.advance(10);
    expect(second).toBeUndefined();
    expect(limiter.view('h')?.waiting).toBe(1);
    gate.ended(first.permit, event(0), { code: 'DW_ERR_RETRY_LATER', retryAfterMs: 1_000 });
    await clock.advance(0);
    expect(second?.kind).toBe('start');
    expect(limiter.view('h')).toMatchObject({ allowedPerSecond: 40, throttles: 1, waiting: 0 });
  });

  it('runs refused together come back one by one at the limit pace, not all at the same wait', async () => {
    const { gate, clock } = gateWith({ adaptive: false, rate: { max: 2, perMs: 1_000 } }, 0);
    const signal = new AbortController().signal;
    const t0 = clock.now();
    const admissions = await Promise.all([0, 1, 2, 3, 4, 5].map((n) => gate.admit({ handler: 'h', event: event(n), deadlineMs: t0 + 60_000, signal })));
    expect(admissions.map((a) => (a.kind === 'later' ? a.retryAtMs - t0 : a.kind))).toEqual(['start', 'start', 1_100, 1_650, 2_200, 2_750]);
  });
});
