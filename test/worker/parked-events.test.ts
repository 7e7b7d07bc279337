/**
 * ParkedEvents with the fake clock: events held back by a retry time wake at it (one timer, for the
 * earliest), events held back by a breaker wake on its changes (one probe when half-open, all when
 * closed), ended events are dropped, and a drain stops the timer.
 */
import { describe, expect, it } from 'vitest';
import { createFakeClock } from '../../src/testing/clock.js';
import type { LeaseEvent } from '../../src/worker/lease-event.js';
import { ParkedEvents } from '../../src/worker/parked-events.js';

interface FakeEvent {
  name: string;
  ended: boolean;
  isRetrying: boolean;
  lease: object;
  failuresOf(handler: string): number;
}

const fake = (name: string, failures = 0, lease: object = {}): FakeEvent => ({ name, ended: false, isRetrying: false, lease, failuresOf: () => failures });
const names = (events: LeaseEvent[]) => events.map((e) => (e as unknown as FakeEvent).name);

function parkedWithLog() {
  const clock = createFakeClock();
  const woken: string[][] = [];
  const parked = new ParkedEvents((events) => events.length > 0 && woken.push(names(events)), clock);
  return { clock, woken, parked, park: (e: FakeEvent, blocked: Parameters<ParkedEvents['park']>[1]) => parked.park(e as unknown as LeaseEvent, blocked) };
}

describe('ParkedEvents', () => {
  it('wakes each retry at its time, with one timer for the earliest; an event that ended meanwhile is dropped', async () => {
    const { clock, woken, parked, park } = parkedWithLog();
    const now = clock.now();
    const gone = fake('gone');
    park(fake('late'), { reason: 'retry', handler: 'a', untilMs: now + 300 });
    park(fake('early'), { reason: 'retry', handler: 'a', untilMs: now + 100 });
    park(gone, { reason: 'retry', handler: 'a', untilMs: now + 100 });
    gone.ended = true;
    expect(parked.waiting).toBe(2);
    await clock.advance(99);
    expect(woken).toEqual([]);
    await clock.advance(1);
    expect(woken).toEqual([['early']]);
    await clock.advance(200);
    expect(woken).toEqual([['early'], ['late']]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('half-open wakes the one event of that handler with the fewest failures; closed wakes the rest; other handlers stay', () => {
    const { woken, parked, park } = parkedWithLog();
    park(fake('a-3', 3), { reason: 'breaker', handler: 'a', untilMs: 0 });
    park(fake('a-1', 1), { reason: 'breaker', handler: 'a', untilMs: 0 });
    park(fake('a-2', 2), { reason: 'breaker', handler: 'a', untilMs: 0 });
    park(fake('b-0', 0), { reason: 'breaker', handler: 'b', untilMs: 0 });
    parked.breakerChanged({ handler: 'a', state: 'open', failureRatio: 1 });
    expect(woken).toEqual([]);
    parked.breakerChanged({ handler: 'a', state: 'half-open', failureRatio: 1 });
    expect(woken).toEqual([['a-1']]);
    parked.breakerChanged({ handler: 'a', state: 'closed', failureRatio: 0 });
    expect(woken).toEqual([['a-1'], ['a-3', 'a-2']]);
    expect(parked.waiting).toBe(1);
  });

  it('a drain stops the timer; a lease whose ack was answered takes its events away', async () => {
    const { clock, woken, parked, park } = parkedWithLog();
    const lease = {};
    park(fake('x', 0, lease), { reason: 'retry', handler: 'a', untilMs: clock.now() + 50 });
    park(fake('y'), { reason: 'breaker', handler: 'a', untilMs: 0 });
    parked.leaseDone(lease as never);
    expect(parked.waiting).toBe(1);
    parked.stop();
    await clock.advance(1_000);
    expect(woken).toEqual([]);
    expect(clock.pendingTimers).toBe(0);
  });
});
