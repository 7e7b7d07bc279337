import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import type { WorkerEmitter } from '../../src/worker/events.js';
import { InFlightCounter } from '../../src/worker/in-flight.js';

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('InFlightCounter', () => {
  it('counts exactly at once and reports the count once per turn, only when it changed', async () => {
    const bus = new EventEmitter() as WorkerEmitter;
    const reported: number[] = [];
    bus.on('inflight:changed', (e) => reported.push(e.inFlight));
    const counter = new InFlightCounter(bus);
    counter.add(1);
    counter.add(1);
    counter.add(1);
    expect(counter.count).toBe(3);
    await nextTurn();
    expect(reported).toEqual([3]);
    counter.add(-1);
    counter.add(1);
    await nextTurn();
    // Back where it was reported: nothing new to say.
    expect(reported).toEqual([3]);
    counter.add(-3);
    await nextTurn();
    expect(reported).toEqual([3, 0]);
  });
});
