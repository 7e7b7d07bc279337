import { describe, expect, it } from 'vitest';
import { atDeadline, whenAborted } from '../src/abort-fanout.js';
import { createFakeClock } from '../src/testing/clock.js';

describe('whenAborted', () => {
  it('calls every subscriber once with the reason, skips those that unsubscribed, and fires at once on an aborted signal', () => {
    const controller = new AbortController();
    const heard: unknown[] = [];
    whenAborted(controller.signal, (reason) => heard.push(['a', reason]));
    const unsubscribe = whenAborted(controller.signal, () => heard.push('b'));
    whenAborted(controller.signal, (reason) => heard.push(['c', reason]));
    unsubscribe.cancel();
    unsubscribe.cancel();
    controller.abort('why');
    controller.abort('again');
    expect(heard).toEqual([['a', 'why'], ['c', 'why']]);
    whenAborted(controller.signal, (reason) => heard.push(['late', reason]));
    expect(heard.at(-1)).toEqual(['late', 'why']);
  });

  it('a subscriber that cancels a later one while the abort is delivered keeps it from being called', () => {
    const controller = new AbortController();
    const heard: string[] = [];
    whenAborted(controller.signal, () => {
      heard.push('first');
      second.cancel();
    });
    const second = whenAborted(controller.signal, () => heard.push('second'));
    whenAborted(controller.signal, () => heard.push('third'));
    controller.abort();
    expect(heard).toEqual(['first', 'third']);
  });
});

describe('atDeadline', () => {
  it('shares one timer per deadline and calls only the callbacks still registered', async () => {
    const clock = createFakeClock(1_000);
    const fired: string[] = [];
    atDeadline(clock, 1_500, () => fired.push('a'));
    const cancelB = atDeadline(clock, 1_500, () => fired.push('b'));
    atDeadline(clock, 2_000, () => fired.push('later'));
    cancelB.cancel();
    await clock.advance(499);
    expect(fired).toEqual([]);
    await clock.advance(1);
    expect(fired).toEqual(['a']);
    await clock.advance(500);
    expect(fired).toEqual(['a', 'later']);
  });

  it('a deadline left without callbacks is dropped when the next one is registered', async () => {
    const clock = createFakeClock(0);
    const fired: string[] = [];
    const cancel = atDeadline(clock, 100, () => fired.push('dropped'));
    cancel.cancel();
    atDeadline(clock, 200, () => fired.push('kept'));
    // Registering again at 100 starts a fresh entry: the old one is gone.
    atDeadline(clock, 100, () => fired.push('new at 100'));
    await clock.advance(200);
    expect(fired).toEqual(['new at 100', 'kept']);
  });
});
