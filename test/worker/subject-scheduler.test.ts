import { describe, expect, it } from 'vitest';
import { runScheduled } from '../../src/worker/subject-scheduler.js';

/** A run that finishes when the test says so. */
function controllableRuns() {
  const pending = new Map<number, (ok: boolean) => void>();
  const startedOrder: number[] = [];
  let active = 0;
  let maxActive = 0;
  return {
    run: (index: number) =>
      new Promise<boolean>((resolve) => {
        startedOrder.push(index);
        active++;
        maxActive = Math.max(maxActive, active);
        pending.set(index, (ok) => {
          active--;
          pending.delete(index);
          resolve(ok);
        });
      }),
    finish: async (index: number, ok = true) => {
      const done = pending.get(index);
      if (done === undefined) throw new Error(`event ${index} is not running`);
      done(ok);
      // Let the scheduler start what follows.
      await new Promise((resolve) => setImmediate(resolve));
    },
    running: () => [...pending.keys()].sort((a, b) => a - b),
    startedOrder,
    maxActive: () => maxActive,
  };
}

describe('runScheduled', () => {
  it('keeps one subject in stream order and runs subjects side by side up to the concurrency', async () => {
    const subjects = ['a', 'b', 'a', 'c', 'b', 'd'];
    const runs = controllableRuns();
    const schedule = runScheduled({ count: subjects.length, subjectOf: (i) => subjects[i] as string, concurrency: 2, run: runs.run, stopStarting: () => false });
    expect(runs.running()).toEqual([0, 1]);
    await runs.finish(0);
    // Event 2 (subject a) became ready behind 3 (c), which waited first.
    expect(runs.running()).toEqual([1, 3]);
    await runs.finish(3);
    expect(runs.running()).toEqual([1, 5]);
    await runs.finish(1);
    await runs.finish(5);
    expect(runs.running()).toEqual([2, 4]);
    await runs.finish(2);
    await runs.finish(4);
    await schedule.finished;
    expect(schedule.settled).toBe(6);
    expect(runs.maxActive()).toBe(2);
    expect([...schedule.started]).toEqual([1, 1, 1, 1, 1, 1]);
  });

  it('after a failure the rest of that subject is never started, other subjects go on', async () => {
    const subjects = ['a', 'a', 'a', 'b'];
    const runs = controllableRuns();
    const schedule = runScheduled({ count: 4, subjectOf: (i) => subjects[i] as string, concurrency: 4, run: runs.run, stopStarting: () => false });
    await runs.finish(0, false);
    await runs.finish(3);
    await schedule.finished;
    expect(schedule.settled).toBe(1);
    expect([...schedule.started]).toEqual([1, 0, 0, 1]);
  });

  it('starts nothing more once stopStarting says so, and ends when the running ones end', async () => {
    let stop = false;
    const runs = controllableRuns();
    const schedule = runScheduled({ count: 5, subjectOf: (i) => `s${i}`, concurrency: 2, run: runs.run, stopStarting: () => stop });
    stop = true;
    await runs.finish(0);
    await runs.finish(1);
    await schedule.finished;
    expect(runs.startedOrder).toEqual([0, 1]);
    expect(schedule.settled).toBe(2);
  });

  it('a run that rejects counts as failed and the rest of the batch goes on', async () => {
    const subjects = ['a', 'a', 'b'];
    const schedule = runScheduled({
      count: 3,
      subjectOf: (i) => subjects[i] as string,
      concurrency: 1,
      run: (i) => (i === 0 ? Promise.reject(new Error('listener threw')) : Promise.resolve(true)),
      stopStarting: () => false,
    });
    await schedule.finished;
    expect([...schedule.started]).toEqual([1, 0, 1]);
    expect(schedule.settled).toBe(1);
  });

  it('an empty batch is finished at once', async () => {
    const schedule = runScheduled({ count: 0, subjectOf: () => 'x', concurrency: 4, run: () => Promise.resolve(true), stopStarting: () => false });
    await schedule.finished;
    expect(schedule.settled).toBe(0);
  });
});
