import { describe, expect, it } from 'vitest';
import { runScheduled, type RunDone, type RunEnd } from '../../src/worker/subject-scheduler.js';

/** A run that finishes when the test says so. */
function controllableRuns() {
  const pending = new Map<number, (end: RunEnd) => void>();
  const startedOrder: number[] = [];
  let active = 0;
  let maxActive = 0;
  return {
    run: (index: number, done: RunDone) => {
      startedOrder.push(index);
      active++;
      maxActive = Math.max(maxActive, active);
      pending.set(index, (end) => {
        active--;
        pending.delete(index);
        done(index, end);
      });
    },
    finish: async (index: number, end: RunEnd = 'settled') => {
      const done = pending.get(index);
      if (done === undefined) throw new Error(`event ${index} is not running`);
      done(end);
      // Let the scheduler start what follows.
      await new Promise((resolve) => setImmediate(resolve));
    },
    running: () => [...pending.keys()].sort((a, b) => a - b),
    startedOrder,
    maxActive: () => maxActive,
  };
}

/** Follows onInProgress: the count now and the most it reached. */
function progressCounter() {
  const counter = {
    now: 0,
    max: 0,
    add: (delta: number) => {
      counter.now += delta;
      counter.max = Math.max(counter.max, counter.now);
    },
  };
  return counter;
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
    await runs.finish(0, 'failed');
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

  it('a run that throws counts as failed and the rest of the batch goes on', async () => {
    const subjects = ['a', 'a', 'b'];
    const schedule = runScheduled({
      count: 3,
      subjectOf: (i) => subjects[i] as string,
      concurrency: 1,
      run: (i, done) => {
        if (i === 0) throw new Error('listener threw');
        done(i, 'settled');
      },
      stopStarting: () => false,
    });
    await schedule.finished;
    expect([...schedule.started]).toEqual([1, 0, 1]);
    expect(schedule.settled).toBe(1);
  });

  it('an empty batch is finished at once', async () => {
    const schedule = runScheduled({ count: 0, subjectOf: () => 'x', concurrency: 4, run: (i, done) => done(i, 'settled'), stopStarting: () => false });
    await schedule.finished;
    expect(schedule.settled).toBe(0);
  });

  it('runs that end at once, inside run, still keep subject order and the concurrency', async () => {
    const subjects = ['a', 'a', 'b', 'a', 'c', 'b'];
    const order: number[] = [];
    const inProgress = progressCounter();
    const schedule = runScheduled({
      count: subjects.length,
      subjectOf: (i) => subjects[i] as string,
      concurrency: 2,
      run: (i, done) => {
        order.push(i);
        done(i, i === 2 ? 'failed' : 'settled');
      },
      stopStarting: () => false,
      onInProgress: inProgress.add,
    });
    await schedule.finished;
    // Subject a in stream order; b stops at its failed event 2, so 5 never starts.
    expect(order.filter((i) => subjects[i] === 'a')).toEqual([0, 1, 3]);
    expect([...schedule.started]).toEqual([1, 1, 1, 1, 1, 0]);
    expect(schedule.settled).toBe(4);
    expect(inProgress.max).toBeLessThanOrEqual(2);
    expect(inProgress.now).toBe(0);
  });

  it('with a window hands over more events than the concurrency but counts at most the concurrency in progress', async () => {
    const subjects = ['a', 'b', 'c', 'a', 'd'];
    const runs = controllableRuns();
    const inProgress = progressCounter();
    const schedule = runScheduled({
      count: subjects.length,
      subjectOf: (i) => subjects[i] as string,
      concurrency: 2,
      window: 10,
      run: runs.run,
      stopStarting: () => false,
      onInProgress: inProgress.add,
    });
    // Every chain head at once; event 3 waits for event 0 (same subject) as before.
    expect(runs.running()).toEqual([0, 1, 2, 4]);
    expect(inProgress.now).toBe(2);
    await runs.finish(0);
    expect(runs.running()).toEqual([1, 2, 3, 4]);
    for (const i of [1, 2, 3, 4]) await runs.finish(i);
    await schedule.finished;
    expect(schedule.settled).toBe(5);
    expect(inProgress.max).toBe(2);
    expect(inProgress.now).toBe(0);
  });

  it('an event the dispatcher dropped before it started is not started, and its subject stops there', async () => {
    const subjects = ['a', 'a', 'b'];
    const runs = controllableRuns();
    const schedule = runScheduled({ count: 3, subjectOf: (i) => subjects[i] as string, concurrency: 1, window: 3, run: runs.run, stopStarting: () => false });
    await runs.finish(0, 'unstarted');
    await runs.finish(2);
    await schedule.finished;
    expect(schedule.settled).toBe(1);
    expect([...schedule.started]).toEqual([0, 0, 1]);
  });
});
