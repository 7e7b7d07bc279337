/**
 * An event of a held lease and its handler runs (LeaseEvent, HandlerRun) on the fake clock
 * (lease-fixture.ts): a failure is counted in the store at the injected clock's time with its retry
 * time, only the failed handler runs again, the handler's own attempt number, the dead letter at
 * --max-attempts, a retry that would come too late for the lease, and RetryLaterError's wait.
 */
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/errors.js';
import { HeldLease, type LeaseOwner } from '../../src/worker/held-lease.js';
import { WorkerSlot } from '../../src/worker/worker-ids.js';
import { batchOf, handler, leaseFixture, type LeaseFixture } from './lease-fixture.js';

/** Holds one lease whose events start at once and again at their retry time (the scheduler's part, by hand). */
function holdOne(f: LeaseFixture, events: { id: string; subject: string }[]) {
  const heard: string[] = [];
  let lease: HeldLease | undefined;
  const startReady = () => {
    if (lease === undefined || !lease.claimed || lease.stopped) return;
    for (let event = lease.nextReady(); event !== undefined; event = lease.nextReady()) if (!event.ended) event.start();
  };
  const owner: LeaseOwner = {
    eventEnded: (event, end) => void heard.push(`${event.eventId} ${end}`),
    pump: startReady,
    eventRetrying: (event) => {
      heard.push(`${event.eventId} retrying at +${event.retryAtMs - f.clock.now()}`);
      f.clock.setTimeout(() => {
        event.lease.enqueueReady(event.index);
        startReady();
      }, event.retryAtMs - f.clock.now());
    },
    chainedStarted: () => {},
    ackSending: () => {},
    leaseDone: () => {},
  };
  lease = new HeldLease(f.context, owner, batchOf(events), new WorkerSlot('w', 0), f.clock.now());
  const held = lease;
  held.start(() => {
    for (const event of held.events) held.enqueueReady(event.index);
    startReady();
  });
  return { lease: held, heard };
}

const boom = { status: 'failed' as const, error: { message: 'boom' } };

describe('LeaseEvent and HandlerRun', () => {
  it("a failure is counted at the injected clock's time; only the failed handler runs again, at its retry time, as attempt 2", async () => {
    const f = leaseFixture({ handlers: [handler('crm'), handler('mail')], retryMs: 2_000 });
    const { heard } = holdOne(f, [{ id: 'e1', subject: 's' }]);
    await f.clock.advance(0);
    expect(f.dispatcher.running).toEqual(['crm:e1', 'mail:e1']);
    const failedAtMs = f.clock.now();
    f.dispatcher.end('crm:e1', boom);
    f.dispatcher.end('mail:e1');
    await f.clock.advance(0);
    expect(heard).toEqual(['e1 retrying at +2000']);
    const claimed = await f.store.claim(['crm:e1'], 'probe', 1);
    expect(claimed.failures?.[0]).toMatchObject({ failures: 1, retryAtMs: failedAtMs + 2_000 });
    await f.clock.advance(2_000);
    expect(f.dispatcher.running).toEqual(['crm:e1']);
    expect(f.dispatcher.started.at(-1)?.job.ctx.attempt).toBe(2);
    f.dispatcher.end('crm:e1');
    await f.clock.advance(0);
    expect(heard.at(-1)).toBe('e1 settled');
    expect(f.dispatcher.started.filter((run) => run.job.handler === 'mail')).toHaveLength(1);
  });

  it('the failure that reaches --max-attempts dead-letters the event for that handler, with its history; the event settles', async () => {
    const f = leaseFixture({ maxAttempts: 2, retryMs: 1_000 });
    const { heard } = holdOne(f, [{ id: 'e1', subject: 's' }]);
    await f.clock.advance(0);
    f.dispatcher.end('sync:e1', boom);
    await f.clock.advance(1_000);
    f.dispatcher.end('sync:e1', { status: 'failed', error: { message: 'still broken' } });
    await f.clock.advance(0);
    expect(heard.at(-1)).toBe('e1 settled');
    expect(f.deadLetters).toHaveLength(1);
    expect(f.deadLetters[0]).toMatchObject({ handler: 'sync', reason: 'max-attempts', attempt: 2, deadLetteredAt: new Date(f.clock.now()).toISOString() });
  });

  it('a retry that would come too late for the lease ends the event failed now (the lease is acked failed and it comes back)', async () => {
    // 10 s lease: deadline at 9 s; a retry must come 2.5 s before it. 8 s is too late.
    const f = leaseFixture({ visibilitySeconds: 10, retryMs: 8_000 });
    const { heard } = holdOne(f, [{ id: 'e1', subject: 's' }]);
    await f.clock.advance(0);
    f.dispatcher.end('sync:e1', boom);
    await f.clock.advance(0);
    expect(heard).toEqual(['e1 failed']);
  });

  it('RetryLaterError: its wait (capped by --retry-backoff-max) is the retry time, and the breaker does not weigh it', async () => {
    const f = leaseFixture({ retryMs: 3_000, breaker: true });
    const { heard } = holdOne(f, [{ id: 'e1', subject: 's' }]);
    await f.clock.advance(0);
    f.dispatcher.end('sync:e1', { status: 'failed', error: { message: 'later', code: ErrorCodes.RETRY_LATER, retryAfterMs: 500 } });
    await f.clock.advance(0);
    expect(heard).toEqual(['e1 retrying at +500']);
    expect(f.context.breakers.state('sync')).toBe('closed');
  });

  it('a duplicate (done already) is not run, and the event settles', async () => {
    const f = leaseFixture();
    await f.store.claim(['sync:e1'], 'earlier', 1_000);
    await f.store.markDone(['sync:e1']);
    const { heard } = holdOne(f, [{ id: 'e1', subject: 's' }]);
    await f.clock.advance(0);
    expect(f.dispatcher.started).toEqual([]);
    expect(heard).toEqual(['e1 settled']);
  });
});
