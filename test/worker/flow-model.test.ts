import { describe, expect, it } from 'vitest';
import { FlowModel, RateAverage, type FlowLimits } from '../../src/worker/flow-model.js';

const limits: FlowLimits = { limit: 100, floorLeases: 2, maxLeases: 20, maxInProgress: 64, windowEvents: 1_000, startWithinMs: 27_000 };
const idle = { held: 0, pulling: 0, runnable: 0, unacked: 0 };

/** A model that has seen `rate` events/s start for a few seconds and pulls answered in `rttMs`. */
function measured(rate: number, rttMs: number, options: Partial<FlowLimits> = {}): FlowModel {
  const model = new FlowModel({ ...limits, ...options });
  for (let t = 0; t <= 5_000; t += 10) model.eventsStarted((rate * 10) / 1_000, t);
  for (let i = 0; i < 50; i++) model.pullAnswered(rttMs);
  return model;
}

describe('RateAverage', () => {
  it('converges on a steady rate and decays when nothing comes', () => {
    const average = new RateAverage(250);
    for (let t = 0; t <= 2_000; t += 10) average.add(10, t);
    expect(average.perSecond(2_000)).toBeCloseTo(1_000, -1);
    expect(average.perSecond(4_000)).toBeLessThan(1);
  });

  it('follows a rise within its rise time and a fall over its fall time', () => {
    const average = new RateAverage(50, 250);
    for (let t = 0; t <= 100; t += 10) average.add(10, t);
    // Two rise times of 1,000 events/s: 86 % of it (a 250 ms time constant would give 33 %).
    expect(average.perSecond(100)).toBeGreaterThan(800);
    // Nothing for one fall time: 37 % of it is left (a 50 ms time constant would leave 1 %).
    expect(average.perSecond(350)).toBeGreaterThan(250);
    expect(average.perSecond(350)).toBeLessThan(400);
  });
});

describe('FlowModel', () => {
  it('pulls up to the floor of leases before anything is measured', () => {
    const model = new FlowModel(limits);
    expect(model.holdBack(idle, 0)).toBeUndefined();
    expect(model.holdBack({ ...idle, pulling: 1 }, 0)).toBeUndefined();
    // At the floor, a budget's worth queued is enough while nothing is measured.
    expect(model.holdBack({ ...idle, pulling: 2 }, 0)).toBe('enough');
  });

  it('keeps two pull round trips of the start rate queued, plus the budget', () => {
    const model = measured(10_000, 50);
    const now = 5_000;
    expect(model.targetQueued(now)).toBeCloseTo(2 * 10_000 * 0.05 + 64, -1);
    const held = { held: 2, pulling: 0, runnable: 0, unacked: 200 };
    expect(model.holdBack({ ...held, runnable: 900 }, now)).toBeUndefined();
    expect(model.holdBack({ ...held, runnable: 1_100 }, now)).toBe('enough');
    // Pulls on their way count as queued, --limit each.
    expect(model.holdBack({ ...held, runnable: 500, pulling: 6 }, now)).toBe('enough');
  });

  it("grows a fresh process's buffer within a pull round trip of its events starting faster", () => {
    const model = new FlowModel(limits);
    for (let i = 0; i < 5; i++) model.pullAnswered(50);
    // 100 ms of 10,000 events/s, from nothing: the buffer wanted is most of two round trips' worth already.
    for (let t = 0; t <= 100; t += 10) model.eventsStarted(100, t);
    expect(model.targetQueued(100)).toBeGreaterThan(0.8 * 2 * 10_000 * 0.05 + 64);
  });

  it('never lets leased and unacknowledged events pass the window, pulls on their way included', () => {
    const model = measured(10_000, 50);
    expect(model.holdBack({ held: 5, pulling: 4, runnable: 0, unacked: 500 }, 5_000)).toBeUndefined();
    expect(model.holdBack({ held: 5, pulling: 5, runnable: 0, unacked: 500 }, 5_000)).toBe('window');
    // The window binds even below the floor.
    expect(new FlowModel({ ...limits, floorLeases: 12 }).holdBack({ held: 10, pulling: 0, runnable: 0, unacked: 1_000 }, 0)).toBe('window');
  });

  it('holds no more leases than the ceiling', () => {
    expect(measured(10_000, 50).holdBack({ held: 15, pulling: 5, runnable: 0, unacked: 0 }, 5_000)).toBe('ceiling');
  });

  it('does not pull a lease whose events could not start well before its deadline', () => {
    // 20 events/s (slow handlers): 600 events queued take 30 s to start, more than 27 s.
    const model = measured(20, 5, { startWithinMs: 27_000, maxInProgress: 1_000 });
    expect(model.holdBack({ held: 3, pulling: 0, runnable: 400, unacked: 400 }, 5_000)).toBeUndefined();
    expect(model.holdBack({ held: 6, pulling: 0, runnable: 500, unacked: 500 }, 5_000)).toBe('deadline');
  });
});
