/**
 * The scheduler on its own, with the fake clock and runs the test ends by hand (lease-fixture.ts):
 * the one budget, subject order across leases, retries that wait in their lease without holding a
 * place, the flow model's counts, and a drain.
 */
import { describe, expect, it } from 'vitest';
import { HeldLease } from '../../src/worker/held-lease.js';
import { InFlightCounter } from '../../src/worker/in-flight.js';
import { Scheduler, type SchedulerListener } from '../../src/worker/scheduler.js';
import { WorkerSlot } from '../../src/worker/worker-ids.js';
import { batchOf, leaseFixture, type LeaseFixture } from './lease-fixture.js';

function schedulerOf(f: LeaseFixture, maxInProgress: number) {
  const calls: string[] = [];
  const listener: SchedulerListener = {
    leaseArrived: () => void calls.push('arrived'),
    eventsStarted: (count) => void calls.push(`started ${count}`),
    leaseLeaving: (lease, answered) => void calls.push(`${lease.pulled.leaseId} ${answered}`),
  };
  const inFlight = new InFlightCounter(f.context.events);
  const scheduler = new Scheduler({ maxInProgress, inFlight, listener, clock: f.clock });
  let slots = 0;
  const accept = (events: { id: string; subject: string }[]) => {
    const lease = new HeldLease(f.context, scheduler, batchOf(events), new WorkerSlot('w', slots++), f.clock.now());
    scheduler.accept(lease, f.clock.now());
    return lease;
  };
  return { scheduler, calls, inFlight, accept };
}

describe('Scheduler', () => {
  it("starts at most the budget, oldest ready first; a subject's next event waits for the one before it to settle", async () => {
    const f = leaseFixture();
    const { scheduler, inFlight, accept, calls } = schedulerOf(f, 2);
    const lease = accept([
      { id: 'a1', subject: 'a' },
      { id: 'b1', subject: 'b' },
      { id: 'a2', subject: 'a' },
      { id: 'c1', subject: 'c' },
    ]);
    await f.clock.advance(0);
    expect(f.dispatcher.running).toEqual(['sync:a1', 'sync:b1']);
    expect(inFlight.count).toBe(2);
    expect(scheduler.queued).toBe(2);
    expect(scheduler.freePlaces).toBe(0);

    f.dispatcher.end('sync:a1');
    // a2 became ready after c1 did: c1 takes the free place.
    expect(f.dispatcher.running).toEqual(['sync:b1', 'sync:c1']);
    f.dispatcher.end('sync:b1');
    expect(f.dispatcher.running).toEqual(['sync:c1', 'sync:a2']);
    f.dispatcher.end('sync:c1');
    f.dispatcher.end('sync:a2');
    await f.clock.advance(0);
    expect(f.acks).toEqual([{ leaseId: lease.pulled.leaseId, generation: 1, status: 'ok' }]);
    expect(scheduler.held).toBe(0);
    expect(inFlight.count).toBe(0);
    expect(calls).toContain(`${lease.pulled.leaseId} answered`);
  });

  it("keeps subject order across leases: a later lease's event of the subject starts only after the earlier one settled", async () => {
    const f = leaseFixture();
    const { accept } = schedulerOf(f, 8);
    accept([{ id: 'x1', subject: 'x' }]);
    accept([
      { id: 'x2', subject: 'x' },
      { id: 'y1', subject: 'y' },
    ]);
    await f.clock.advance(0);
    expect(f.dispatcher.running).toEqual(['sync:x1', 'sync:y1']);
    f.dispatcher.end('sync:x1');
    expect(f.dispatcher.running).toEqual(['sync:y1', 'sync:x2']);
  });

  it('a failed event waits in its lease for its retry time without holding a place; the flow model counts it as not runnable', async () => {
    const f = leaseFixture({ retryMs: 1_000 });
    const { scheduler, inFlight, accept } = schedulerOf(f, 1);
    accept([
      { id: 'a1', subject: 'a' },
      { id: 'b1', subject: 'b' },
    ]);
    await f.clock.advance(0);
    expect(f.dispatcher.running).toEqual(['sync:a1']);
    f.dispatcher.end('sync:a1', { status: 'failed', error: { message: 'boom' } });
    await f.clock.advance(0);
    // Its place went to b1; a1 waits for its retry time (1 s), in the lease.
    expect(f.dispatcher.running).toEqual(['sync:b1']);
    expect(inFlight.count).toBe(1);
    f.dispatcher.end('sync:b1');
    expect(scheduler.runnable).toBe(0);
    await f.clock.advance(999);
    expect(f.dispatcher.running).toEqual([]);
    await f.clock.advance(1);
    expect(f.dispatcher.running).toEqual(['sync:a1']);
    expect(f.dispatcher.started.at(-1)?.job.ctx.attempt).toBe(2);
    f.dispatcher.end('sync:a1');
    await f.clock.advance(0);
    expect(f.acks.map((ack) => ack.status)).toEqual(['ok']);
  });

  it("counts a lease's events held back by nothing as runnable, and those behind a retry time as not", async () => {
    const f = leaseFixture({ retryMs: 1_000 });
    await f.store.recordFailures([{ key: 'sync:r1', failedAtMs: f.clock.now(), retryAtMs: f.clock.now() + 5_000 }], 'someone');
    const { scheduler, accept } = schedulerOf(f, 1);
    accept([
      { id: 'r1', subject: 'r' },
      { id: 'p1', subject: 'p' },
      { id: 'q1', subject: 'q' },
    ]);
    await f.clock.advance(0);
    // r1's retry time is 5 s away: parked; p1 runs; q1 waits for the budget.
    expect(f.dispatcher.running).toEqual(['sync:p1']);
    expect(scheduler.queued).toBe(2);
    expect(scheduler.runnable).toBe(1);
  });

  it('drain: nothing starts any more, waiting events end unstarted and their lease is acked failed once its running events end', async () => {
    const f = leaseFixture();
    const { scheduler, accept } = schedulerOf(f, 1);
    const lease = accept([
      { id: 'a1', subject: 'a' },
      { id: 'b1', subject: 'b' },
    ]);
    await f.clock.advance(0);
    scheduler.drain();
    let empty = false;
    void scheduler.whenEmpty().then(() => (empty = true));
    await f.clock.advance(0);
    expect(f.acks).toEqual([]);
    f.dispatcher.end('sync:a1');
    await f.clock.advance(0);
    expect(f.acks).toEqual([{ leaseId: lease.pulled.leaseId, generation: 1, status: 'failed' }]);
    expect(empty).toBe(true);
    expect(f.dispatcher.started.map((run) => run.job.event.id)).toEqual(['a1']);
    // b1 never ran: its claim went back with the ack, a redelivery finds it free.
    expect((await f.store.claim(['sync:b1'], 'next-owner', 1_000)).states).toEqual(['new']);
  });
});
