// Plain JavaScript importing the package by its name (dist/, as users run it).
import { defineHandler, RetryLaterError } from 'durable-worker';
import { callDependency } from '../isolation-handlers/_call.mjs';

/**
 * The handler of bench/outage/waits.ts; what it does depends on the event's subject:
 * `later-N` asks to wait 15 s on its first run (that run is recorded as `later-first`), `once-N` fails
 * its first run, `poison-N` always fails, anything else takes effect at once (`plain`).
 */
export default defineHandler({
  type: 'waits.test',
  async handle(event, ctx) {
    const subject = event.subject ?? '';
    if (subject.startsWith('poison-')) throw new Error('poison: fails on every run');
    if (subject.startsWith('once-') && ctx.attempt === 1) throw new Error('fails on its first run');
    if (subject.startsWith('later-') && ctx.attempt === 1) {
      await callDependency('later-first', event, ctx.signal);
      throw new RetryLaterError('asked to come back in 15 s', { afterMs: 15_000 });
    }
    await callDependency(subject.startsWith('later-') ? 'later' : subject.startsWith('once-') ? 'once' : 'plain', event, ctx.signal);
  },
});
