import { describe, expect, it } from 'vitest';
import { atDeadline, whenAborted } from '../../src/runtime/abort-fanout.js';
import { createFakeClock } from '../../src/testing/clock.js';

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
    expect(heard).toEqual([
      ['a', 'why'],
      ['c', 'why'],
    ]);
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

  it('a deadline registered again after it fired gets a timer of its own, not the spent one', async () => {
    const clock = createFakeClock(0);
    const fired: string[] = [];
    atDeadline(clock, 100, () => fired.push('first'));
    await clock.advance(100);
    // The same deadline straight after (the runs of a batch share one): a new entry, due at once.
    atDeadline(clock, 100, () => fired.push('second'));
    await clock.advance(0);
    expect(fired).toEqual(['first', 'second']);
  });

  it('a signal watched again after it aborted calls back at once, and a new signal gets its own list', () => {
    const first = new AbortController();
    const seen: string[] = [];
    whenAborted(first.signal, () => seen.push('first a'));
    first.abort('r1');
    whenAborted(first.signal, (reason) => seen.push(`first b ${String(reason)}`));
    const second = new AbortController();
    whenAborted(second.signal, () => seen.push('second'));
    expect(seen).toEqual(['first a', 'first b r1']);
    second.abort();
    expect(seen).toEqual(['first a', 'first b r1', 'second']);
  });
});
