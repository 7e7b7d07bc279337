/**
 * The pull controller with the fake clock and an api that answers as told (WorkerFlow wires it with
 * the real flow model and scheduler): idle polling backs off by doubling, a 429's Retry-After is
 * honoured to the millisecond and then one pull probes, a failing platform is one back-off for the
 * process, and a lease answered 200 runs and is acked before the next pull goes.
 */
import { describe, expect, it } from 'vitest';
import type { ConsumerApi, PullResult } from '../../src/client/consumer-api.js';
import { NetworkError } from '../../src/client/errors.js';
import { WorkerFlow } from '../../src/worker/flow.js';
import { InFlightCounter } from '../../src/worker/in-flight.js';
import { DEFAULT_PULL_TIMINGS } from '../../src/worker/pull-options.js';
import { Readiness } from '../../src/worker/readiness.js';
import { batchOf, leaseFixture, type LeaseFixture } from './lease-fixture.js';

function flowOf(f: LeaseFixture, answer: (pull: number) => PullResult | Error, maxLeases = 2) {
  const pulls: number[] = [];
  const api: ConsumerApi = {
    pull: async () => {
      pulls.push(f.clock.now());
      const result = answer(pulls.length);
      if (result instanceof Error) throw result;
      return result;
    },
    acknowledge: f.context.api.acknowledge,
    ensureCredential: async () => {},
  };
  const events = f.context.events;
  const flow = new WorkerFlow({
    leaseContext: f.context,
    api,
    destination: 'dest',
    limit: 10,
    visibilitySeconds: f.context.visibilitySeconds,
    workerIdPrefix: 'w',
    limits: { limit: 10, floorLeases: 1, maxLeases, maxInProgress: 4, windowEvents: 1_000, startWithinMs: 10_000 },
    inFlight: new InFlightCounter(events),
    readiness: new Readiness(events),
    logger: f.context.logger,
    timings: DEFAULT_PULL_TIMINGS,
    clock: f.clock,
    forceSignal: f.force.signal,
    onIdle: () => {},
  });
  return { flow, pulls };
}

const gaps = (times: number[]) => times.slice(1).map((t, i) => t - (times[i] as number));

describe('PullController', () => {
  it('caught up, it polls one pull at a time after a wait that doubles from 100 ms to 2 s (half of it jittered), on the injected clock', async () => {
    const f = leaseFixture();
    const { flow, pulls } = flowOf(f, () => ({ status: 204 }));
    flow.start();
    await f.clock.advance(0);
    // Every workerId is pulled with once at start (a restart gets back what it held).
    expect(pulls).toHaveLength(2);
    await f.clock.advance(20_000);
    const waits = gaps(pulls.slice(1));
    let ceiling = DEFAULT_PULL_TIMINGS.idleMinMs;
    for (const wait of waits) {
      expect(wait).toBeGreaterThanOrEqual(ceiling / 2);
      expect(wait).toBeLessThanOrEqual(ceiling);
      ceiling = Math.min(DEFAULT_PULL_TIMINGS.idleMaxMs, ceiling * 2);
    }
    expect(waits.length).toBeGreaterThan(8);
    await flow.drain();
  });

  it('a 429 with Retry-After: nothing is pulled before it, then one pull probes', async () => {
    const f = leaseFixture();
    const { flow, pulls } = flowOf(f, (pull) => (pull === 1 ? { status: 429, retryAfterMs: 5_000 } : { status: 204 }));
    const startMs = f.clock.now();
    flow.start();
    await f.clock.advance(4_999);
    expect(pulls).toEqual([startMs]);
    await f.clock.advance(1);
    expect(pulls).toEqual([startMs, startMs + 5_000]);
    await flow.drain();
  });

  it('a failing platform: a back-off (full jitter under 200 ms at first) on the injected clock, then a probe', async () => {
    const f = leaseFixture();
    const reset = () => new NetworkError({ method: 'POST', path: '/pull', cause: new Error('connection reset') });
    const { flow, pulls } = flowOf(f, (pull) => (pull === 1 ? reset() : { status: 204 }), 1);
    flow.start();
    await f.clock.advance(0);
    expect(pulls).toHaveLength(1);
    await f.clock.advance(DEFAULT_PULL_TIMINGS.errorBaseMs);
    expect(pulls.length).toBeGreaterThanOrEqual(2);
    expect((pulls[1] as number) - (pulls[0] as number)).toBeLessThanOrEqual(DEFAULT_PULL_TIMINGS.errorBaseMs);
    await f.clock.advance(1_000);
    // The probe found the platform caught up: the next pull is an idle poll, after its wait.
    expect((pulls[2] as number) - (pulls[1] as number)).toBeGreaterThanOrEqual(DEFAULT_PULL_TIMINGS.idleMinMs / 2);
    await flow.drain();
  });

  it('a lease answered 200 goes to the scheduler: its events run, it is acked ok, and the controller pulls again', async () => {
    const f = leaseFixture();
    const batch = batchOf([
      { id: 'a1', subject: 'a' },
      { id: 'b1', subject: 'b' },
    ]);
    const { flow, pulls } = flowOf(f, (pull) => (pull === 1 ? { status: 200, batch } : { status: 204 }), 1);
    flow.start();
    await f.clock.advance(0);
    expect(f.dispatcher.running).toEqual(['sync:a1', 'sync:b1']);
    f.dispatcher.end('sync:a1');
    f.dispatcher.end('sync:b1');
    await f.clock.advance(0);
    expect(f.acks).toEqual([{ leaseId: batch.leaseId, generation: 1, status: 'ok' }]);
    expect(pulls.length).toBeGreaterThanOrEqual(2);
    expect(flow.controller.idle).toBe(true);
    await flow.drain();
  });
});
