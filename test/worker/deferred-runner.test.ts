/**
 * The deferred runner's idleness with the fake clock: `--exit-when-idle` stops a process only when
 * the store holds no deferred run, so a run this process has just deferred makes it busy at once,
 * before the runner next looks at the store.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { MemoryDeferredRuns } from '../../src/idempotency/memory-deferred.js';
import { DeferredRunner } from '../../src/worker/deferred-runner.js';
import type { Scheduler } from '../../src/worker/scheduler.js';
import { leaseFixture } from './lease-fixture.js';

describe('DeferredRunner', () => {
  it('is idle once the store holds nothing, and busy again the moment this process defers a run', async () => {
    const f = leaseFixture();
    let idleReports = 0;
    const runner = new DeferredRunner({
      deferred: new MemoryDeferredRuns(),
      scheduler: { freePlaces: 8 } as Scheduler,
      context: f.context,
      breakers: f.context.breakers,
      handlers: new Map(),
      ownerPrefix: 'test',
      clock: f.clock,
      logger: pino({ level: 'silent' }),
      onIdle: () => void idleReports++,
    });
    expect(runner.idle).toBe(false);
    runner.start();
    await f.clock.advance(0);
    expect(runner.idle).toBe(true);
    expect(idleReports).toBe(1);
    // A lease of this process deferred a run for 5 s: the store holds it before the next look.
    runner.runAt(f.clock.now() + 5_000);
    expect(runner.idle).toBe(false);
    runner.stop();
  });
});
