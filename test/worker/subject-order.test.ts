import { describe, expect, it } from 'vitest';
import { SubjectLink, SubjectOrder, type ChainedEvent } from '../../src/worker/subject-order.js';

type Lease = { name: string };
interface Ev extends ChainedEvent<Ev> {}

/** Ids are `e<sequence>`: e1 comes before e2 in the stream. */
function event(holder: Lease, subject: string, eventId: string): Ev {
  return { subject, eventId, sequence: eventId.slice(1), holder, subjectLink: new SubjectLink<Ev>() };
}

describe('SubjectOrder', () => {
  const a: Lease = { name: 'a' };
  const b: Lease = { name: 'b' };

  it('lets the first event of each subject run and chains the later ones behind it, across leases', () => {
    const order = new SubjectOrder<Ev>();
    const a1 = event(a, 's', 'e1');
    const a2 = event(a, 't', 'e2');
    const b1 = event(b, 's', 'e3');
    const b2 = event(b, 's', 'e4');
    expect([order.enter(a1), order.enter(a2), order.enter(b1), order.enter(b2)]).toEqual(['ready', 'ready', 'waiting', 'waiting']);
    expect(order.settled(a1)).toBe(b1);
    expect(order.settled(b1)).toBe(b2);
    expect(order.settled(b2)).toBeUndefined();
    expect(order.settled(a2)).toBeUndefined();
    // Both chains are empty again: the next event of each subject runs at once.
    expect(order.enter(event(b, 's', 'e5'))).toBe('ready');
    expect(order.enter(event(b, 't', 'e6'))).toBe('ready');
  });

  it('drops the events behind one that failed, and fences its subject for later arrivals', () => {
    const order = new SubjectOrder<Ev>();
    const first = event(a, 's', 'e1');
    const behind = event(b, 's', 'e2');
    const other = event(b, 't', 'e3');
    order.enter(first);
    order.enter(behind);
    order.enter(other);
    expect(order.broken(first, true)).toEqual([behind]);
    expect(order.fenced).toBe(1);
    // A later lease's event of the fenced subject must not run; other subjects are not affected.
    expect(order.enter(event({ name: 'c' }, 's', 'e9'))).toBe('fenced');
    expect(order.enter(event({ name: 'c' }, 'u', 'e10'))).toBe('ready');
    expect(order.settled(other)).toBeUndefined();
  });

  it('keeps a subject fenced until every event it let go came back, whatever order their leases come back in', () => {
    const order = new SubjectOrder<Ev>();
    const c: Lease = { name: 'c' };
    const failed = event(a, 's', 'e1');
    const behind = event(b, 's', 'e2');
    order.enter(failed);
    order.enter(behind);
    order.broken(failed, true);
    order.released(b, 1_000);
    order.released(a, 2_000);
    // b's lease comes back first (a redelivery: no evidence of anything): e2 must wait, and is let go again.
    order.admitLease((id) => id === 'e2', undefined);
    expect(order.enter(event(b, 's', 'e2'))).toBe('fenced');
    // New work pulled before a's release: e1 may still come back here.
    order.admitLease(() => false, 1_500);
    expect(order.enter(event(c, 's', 'e3'))).toBe('fenced');
    // e1 comes back: it runs; e2 and e3, let go, are still missing, so a later event waits for them.
    order.admitLease((id) => id === 'e1', undefined);
    expect(order.enter(event(a, 's', 'e1'))).toBe('ready');
    expect(order.enter(event(c, 's', 'e4'))).toBe('fenced');
    order.admitLease((id) => id === 'e2' || id === 'e3' || id === 'e4', undefined);
    expect(order.fenced).toBe(0);
  });

  it('lifts a fence once the missing events were released longer ago than a lease lasts, whatever arrives', () => {
    const order = new SubjectOrder<Ev>();
    const failed = event(a, 's', 'e1');
    order.enter(failed);
    order.broken(failed, true);
    order.released(a, 1_000);
    order.admitLease(() => false, undefined, 1_000);
    expect(order.fenced).toBe(1);
    order.admitLease(() => false, undefined, 1_001);
    expect(order.fenced).toBe(0);
  });

  it('lifts a fence when the failed event comes back, which then runs first', () => {
    const order = new SubjectOrder<Ev>();
    const failed = event(a, 's', 'e1');
    order.enter(failed);
    order.broken(failed, true);
    const redelivered: Lease = { name: 'a-again' };
    order.admitLease((id) => id === 'e1', 0);
    expect(order.fenced).toBe(0);
    const again = event(redelivered, 's', 'e1');
    const later = event(redelivered, 's', 'e2');
    expect([order.enter(again), order.enter(later)]).toEqual(['ready', 'waiting']);
  });

  it('lifts a fence for new work pulled after the failed lease was released (another worker has the retry)', () => {
    const order = new SubjectOrder<Ev>();
    const failed = event(a, 's', 'e1');
    order.enter(failed);
    order.broken(failed, true);
    // Not released yet: a pull sent at any time does not lift it.
    order.admitLease(() => false, 5_000);
    expect(order.fenced).toBe(1);
    order.released(a, 1_000);
    // A pull sent before the release could not have brought the retry back.
    order.admitLease(() => false, 1_000);
    expect(order.fenced).toBe(1);
    // A redelivered lease, or new work with an earlier pull unanswered, tells nothing (the scheduler passes no time).
    order.admitLease(() => false, undefined);
    expect(order.fenced).toBe(1);
    order.admitLease(() => false, 1_001);
    expect(order.fenced).toBe(0);
    expect(order.enter(event(b, 's', 'e2'))).toBe('ready');
  });

  it('never hands a cut waiting event over: settling the one ahead of it ends the chain', () => {
    const order = new SubjectOrder<Ev>();
    const running = event(a, 's', 'e1');
    const waiting = event(b, 's', 'e2');
    order.enter(running);
    order.enter(waiting);
    order.broken(waiting, false);
    expect(order.settled(running)).toBeUndefined();
  });

  it('keeps the earlier event as the fence when an event waiting behind it was cut first', () => {
    const order = new SubjectOrder<Ev>();
    const running = event(a, 's', 'e1');
    const waiting = event(b, 's', 'e2');
    order.enter(running);
    order.enter(waiting);
    // The later lease's deadline drops its waiting event: the chain keeps the running one.
    expect(order.broken(waiting, true)).toEqual([]);
    // Then the running one fails: the fence moves to it (it is earlier).
    order.broken(running, true);
    order.admitLease((id) => id === 'e2', 0);
    expect(order.fenced).toBe(1);
    order.admitLease((id) => id === 'e1', 0);
    expect(order.fenced).toBe(0);
  });

  it('drops without fencing during a drain', () => {
    const order = new SubjectOrder<Ev>();
    const first = event(a, 's', 'e1');
    order.enter(first);
    order.broken(first, false);
    expect(order.fenced).toBe(0);
    expect(order.enter(event(b, 's', 'e2'))).toBe('ready');
  });

  it('settling the last event of a chain forgets the subject; settling a middle one hands over to the next', () => {
    const order = new SubjectOrder<Ev>();
    const events = ['e1', 'e2', 'e3'].map((id) => event(a, 's', id));
    for (const e of events) order.enter(e);
    expect(order.settled(events[0]!)).toBe(events[1]);
    expect(order.settled(events[1]!)).toBe(events[2]);
    expect(order.settled(events[2]!)).toBeUndefined();
    expect(order.enter(event(a, 's', 'e4'))).toBe('ready');
  });
});
