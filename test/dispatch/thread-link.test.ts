import { once } from 'node:events';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { ThreadLink } from '../../src/dispatch/thread-link.js';
import { NO_LEADER, NOT_OK_DURATION, type OutcomesMessage, type RunsMessage } from '../../src/dispatch/thread-protocol.js';
import type { PooledRun } from '../../src/dispatch/thread-runs.js';
import type { DispatchJob, DispatchResult, JobContext } from '../../src/dispatch/types.js';
import type { CloudEvent } from '../../src/types.js';
import { waitFor } from '../fixtures/wait-for.js';

/**
 * The link's two messages, exactly: runs go out as columns, outcomes come back as task ids with a
 * duration for each run that simply ended ok and an object, in order, for each other one
 * (src/dispatch/thread-protocol.ts). The thread's side is played here on the other port.
 */

const ctx: JobContext = { attempt: 1, deliveryAttempt: 1, generation: 1, workerId: 'w-0', leaseId: 'lease-1', deadlineMs: Date.now() + 60_000 };
const event = (id: string): CloudEvent => ({ specversion: '1.0', id, source: '/s', type: 't', subject: 'entry-1', time: '2026-11-27T00:00:00Z', sequence: id, data: {} }) as CloudEvent;

/** Enough of a PooledRun for the link: what it reads when sending, and what the link calls on it. */
class StubRun {
  readonly run: { job: DispatchJob };
  after: StubRun | undefined;
  taskId = 0;
  finished: DispatchResult | undefined;
  missed = false;

  constructor(job: DispatchJob, after?: StubRun) {
    this.run = { job };
    this.after = after;
  }

  sent(_link: ThreadLink, taskId: number): void {
    this.taskId = taskId;
  }

  finish(result: DispatchResult): void {
    this.finished = result;
  }

  followMissed(): void {
    this.missed = true;
  }
}

const ports: MessagePort[] = [];
afterEach(() => {
  for (const port of ports.splice(0)) port.close();
});

function link(): { link: ThreadLink; thread: MessagePort } {
  const { port1, port2 } = new MessageChannel();
  ports.push(port1, port2);
  return { link: new ThreadLink(7, port1, () => {}), thread: port2 };
}

describe('thread link messages', () => {
  it('sends runs as columns: one context object for a lease, the rare columns only where needed', async () => {
    const { link: l, thread } = link();
    const leader = new StubRun({ handler: 'a', event: event('1'), ctx });
    const follower = new StubRun({ handler: 'a', event: event('2'), ctx }, leader);
    const batch = new StubRun({ handler: 'b', event: event('3'), events: [event('3'), event('4')], ctx });
    const traced = new StubRun({ handler: 'c', event: event('5'), ctx, trace: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' } });
    leader.taskId = 10; // as sent in an earlier message
    const received = once(thread, 'message') as Promise<[RunsMessage]>;
    l.send([follower, batch, traced] as unknown as PooledRun[], 11);
    const [message] = await received;

    expect(message.firstTaskId).toBe(11);
    expect(message.handlers).toEqual(['a', 'b', 'c']);
    expect(message.events.map((e) => e.id)).toEqual(['2', '3', '5']);
    // The clone keeps shared references shared: one ctx object on the other side.
    expect(message.contexts[0]).toEqual(ctx);
    expect(message.contexts[1]).toBe(message.contexts[0]);
    expect(message.contexts[2]).toBe(message.contexts[0]);
    expect(message.after).toEqual([10, NO_LEADER, NO_LEADER]);
    expect(message.batches?.[1]?.map((e) => e.id)).toEqual(['3', '4']);
    expect(message.batches?.[0]).toBeUndefined();
    expect(message.traces?.[2]).toEqual({ traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' });
    expect(message.states.length).toBe(3);
    expect([follower.taskId, batch.taskId, traced.taskId]).toEqual([11, 12, 13]);
    expect(l.load).toBe(3);
  });

  it('leaves out the columns no run needs', async () => {
    const { link: l, thread } = link();
    const received = once(thread, 'message') as Promise<[RunsMessage]>;
    l.send([new StubRun({ handler: 'a', event: event('1'), ctx })] as unknown as PooledRun[], 1);
    const [message] = await received;
    expect(Object.keys(message).sort()).toEqual(['contexts', 'events', 'firstTaskId', 'handlers', 'states']);
  });

  it('settles each run with its own outcome, the plain oks from two numbers and the others in order', async () => {
    const { link: l, thread } = link();
    const runs = ['1', '2', '3', '4', '5'].map((id) => new StubRun({ handler: 'a', event: event(id), ctx }));
    l.send(runs as unknown as PooledRun[], 1);
    const failed: DispatchResult = { status: 'failed', error: { message: 'boom' }, durationMs: 3 };
    const withResults: DispatchResult = { status: 'ok', results: [{ status: 'ok' }, { status: 'failed', error: { message: 'second' } }], durationMs: 4 };
    thread.postMessage({
      taskIds: [2, 1, 4, 3, 5],
      okDurationsMs: [1.5, NOT_OK_DURATION, 0.25, NOT_OK_DURATION, NOT_OK_DURATION],
      others: [{ outcome: failed }, { outcome: withResults }, { outcome: { status: 'unstarted' }, missed: true }],
    } satisfies OutcomesMessage);
    await waitFor('the outcomes settled', () => l.load === 0);

    expect(runs[1]!.finished).toEqual({ status: 'ok', durationMs: 1.5 });
    expect(runs[0]!.finished).toEqual(failed);
    expect(runs[3]!.finished).toEqual({ status: 'ok', durationMs: 0.25 });
    expect(runs[2]!.finished).toEqual(withResults);
    expect(runs[4]!.finished).toBeUndefined();
    expect(runs[4]!.missed).toBe(true);
  });

  it('ignores outcomes of runs it no longer knows, and still reads the others in order', async () => {
    const { link: l, thread } = link();
    const runs = ['1', '2'].map((id) => new StubRun({ handler: 'a', event: event(id), ctx }));
    l.send(runs as unknown as PooledRun[], 1);
    l.forget(1);
    const failed: DispatchResult = { status: 'failed', error: { message: 'late' } };
    thread.postMessage({ taskIds: [1, 2], okDurationsMs: [NOT_OK_DURATION, NOT_OK_DURATION], others: [{ outcome: { status: 'unstarted' } }, { outcome: failed }] } satisfies OutcomesMessage);
    await waitFor('the outcomes settled', () => l.load === 0);
    expect(runs[0]!.finished).toBeUndefined();
    expect(runs[1]!.finished).toEqual(failed);
  });
});
