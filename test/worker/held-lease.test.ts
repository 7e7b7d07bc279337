/**
 * A held lease on its own, with the fake clock (lease-fixture.ts): its deadline stops it and aborts
 * its runs, a run that cannot report is given up after the grace, done marks are stored before the
 * ack, claims of what did not run go back with it, and a lease of the deferred runner acks nothing.
 */
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/errors.js';
import { HeldLease, type LeaseOwner } from '../../src/worker/held-lease.js';
import type { LeaseEvent } from '../../src/worker/lease-event.js';
import { safetyMarginMs, STRAGGLER_GRACE_MS } from '../../src/worker/timing.js';
import { WorkerSlot } from '../../src/worker/worker-ids.js';
import { batchOf, leaseFixture, type LeaseFixture } from './lease-fixture.js';

/** An owner that starts every ready event at once (no budget, no subject order) and records what it hears. */
function ownerOf(f: LeaseFixture) {
  const heard: string[] = [];
  let lease: HeldLease | undefined;
  const owner: LeaseOwner = {
    eventEnded: (event, end, place) => void heard.push(`${event.eventId} ${end} from ${place}`),
    pump: () => {
      if (lease === undefined || !lease.claimed || lease.stopped) return;
      for (let event = lease.nextReady(); event !== undefined; event = lease.nextReady()) if (!event.ended) event.start();
    },
    eventRetrying: (event) => void heard.push(`${event.eventId} retrying`),
    chainedStarted: (event) => void heard.push(`${event.eventId} chained`),
    ackSending: (l) => void heard.push(`ack sending ${l.pulled.leaseId}`),
    leaseDone: (l, answer) => void heard.push(`done ${l.pulled.leaseId} ${answer}`),
  };
  const hold = (events: { id: string; subject: string }[]) => {
    lease = new HeldLease(f.context, owner, batchOf(events), new WorkerSlot('w', 0), f.clock.now());
    const held = lease;
    held.start(() => {
      for (const event of held.events) held.enqueueReady(event.index);
      owner.pump();
    });
    return held;
  };
  return { heard, hold };
}

describe('HeldLease', () => {
  it('its deadline (expiry minus the safety margin) stops it on the injected clock: runs are aborted, waiting events end unstarted', async () => {
    const f = leaseFixture({ visibilitySeconds: 10 });
    const { hold, heard } = ownerOf(f);
    const lease = hold([{ id: 'a1', subject: 'a' }]);
    await f.clock.advance(0);
    expect(lease.deadlineMs).toBe(f.clock.now() + 10_000 - safetyMarginMs(10_000));
    expect(f.dispatcher.running).toEqual(['sync:a1']);
    await f.clock.advance(lease.deadlineMs - f.clock.now() - 1);
    expect(lease.signal.aborted).toBe(false);
    await f.clock.advance(1);
    expect(lease.stopped).toBe(true);
    expect((lease.signal.reason as { code?: string }).code).toBe(ErrorCodes.HANDLER_TIMEOUT);
    // The run reports its end as the dispatcher would on the abort: failed, too slow.
    f.dispatcher.end('sync:a1', { status: 'failed', error: { message: 'lease deadline', code: ErrorCodes.HANDLER_TIMEOUT } });
    await f.clock.advance(0);
    expect(f.acks.map((ack) => ack.status)).toEqual(['failed']);
    expect(heard.at(-1)).toBe(`done ${lease.pulled.leaseId} answered`);
  });

  it('a run that cannot report is given up STRAGGLER_GRACE_MS after the abort, on the injected clock: the lease is acked failed', async () => {
    const f = leaseFixture({ visibilitySeconds: 10 });
    const { hold, heard } = ownerOf(f);
    const lease = hold([{ id: 'a1', subject: 'a' }]);
    await f.clock.advance(lease.deadlineMs - f.clock.now());
    expect(lease.signal.aborted).toBe(true);
    await f.clock.advance(STRAGGLER_GRACE_MS - 1);
    expect(f.acks).toEqual([]);
    await f.clock.advance(1);
    expect(heard).toContain('a1 failed from running');
    expect(f.acks.map((ack) => ack.status)).toEqual(['failed']);
  });

  it('done marks are stored before the ack is sent; claims of events that never started go back with a failed ack', async () => {
    const f = leaseFixture();
    const { hold } = ownerOf(f);
    const marksAtAck: string[][] = [];
    const acknowledge = f.context.api.acknowledge;
    f.context.api = {
      acknowledge: async (destination, request, signal) => {
        marksAtAck.push((await f.store.claim(['sync:a1', 'sync:b1'], 'probe', 1_000)).states);
        return acknowledge(destination, request, signal);
      },
    };
    const lease = hold([
      { id: 'a1', subject: 'a' },
      { id: 'b1', subject: 'b' },
    ]);
    await f.clock.advance(0);
    f.dispatcher.end('sync:a1');
    lease.stop(undefined);
    // b1 is running: the lease waits for it; it never started anything else.
    f.dispatcher.end('sync:b1', { status: 'unstarted' });
    await f.clock.advance(0);
    expect(f.acks.map((ack) => ack.status)).toEqual(['failed']);
    // At the ack: a1's done mark stored, b1's claim (taken by this lease, never run) released.
    expect(marksAtAck).toEqual([['done', 'new']]);
  });

  it('claims its keys for the rest of its lease, measured on the injected clock', async () => {
    const f = leaseFixture({ visibilitySeconds: 20 });
    const { hold } = ownerOf(f);
    await f.clock.advance(5_000);
    hold([{ id: 'a1', subject: 'a' }]);
    await f.clock.advance(19_999);
    expect((await f.store.claim(['sync:a1'], 'other', 1_000)).states).toEqual(['busy']);
    await f.clock.advance(1);
    expect((await f.store.claim(['sync:a1'], 'other', 1_000)).states).toEqual(['new']);
  });

  it('an event reports its end through its lease to the owner once, with where it was', async () => {
    const f = leaseFixture();
    const { hold, heard } = ownerOf(f);
    const lease = hold([{ id: 'a1', subject: 'a' }]);
    await f.clock.advance(0);
    f.dispatcher.end('sync:a1');
    (lease.events[0] as LeaseEvent).drop();
    await f.clock.advance(0);
    expect(heard.filter((line) => line.startsWith('a1'))).toEqual(['a1 settled from running']);
    expect(lease.settledEvents).toBe(1);
  });
});
