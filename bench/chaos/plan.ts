import { mulberry32 } from '../../src/emulator/faults/injector.js';
import type { NewEvent } from '../../src/emulator/index.js';

/** What one generated event asks of the chaos handlers (test/fixtures/chaos-handlers). */
export type EventKind = 'work' | 'flaky' | 'poison';

export interface PlannedEvent {
  kind: EventKind;
  event: NewEvent;
}

export interface PlanOptions {
  seed: number;
  events: number;
  /** Share of events whose handler always fails (at least one event when > 0). */
  poisonRate: number;
  /** Share of work events that fail on their first attempt(s), then succeed. */
  flakyRate: number;
  /** Distinct subjects: events of one subject are handled in stream order by the worker. */
  subjects: number;
}

/**
 * The events of a run, fully determined by the seed: kinds, subjects and planned failures travel in
 * the event data, so the handlers need no randomness of their own and a seed replays the same run.
 */
export function planEvents(o: PlanOptions): PlannedEvent[] {
  const random = mulberry32(o.seed ^ 0x5eed);
  const poison = new Set<number>();
  const poisonCount = o.poisonRate > 0 ? Math.max(1, Math.round(o.events * o.poisonRate)) : 0;
  while (poison.size < Math.min(poisonCount, o.events)) poison.add(Math.floor(random() * o.events));
  const out: PlannedEvent[] = [];
  for (let i = 0; i < o.events; i++) {
    const subject = `s-${Math.floor(random() * o.subjects)}`;
    if (poison.has(i)) {
      out.push({ kind: 'poison', event: { type: 'chaos.poison', subject, data: { i } } });
      continue;
    }
    const flaky = random() < o.flakyRate;
    // Mostly quick handlers, a few slow ones so kills catch events in flight.
    const sleepMs = random() < 0.1 ? 10 + Math.floor(random() * 40) : Math.floor(random() * 3);
    const data: Record<string, unknown> = { i, sleepMs };
    if (flaky) data.failOnAttempts = random() < 0.7 ? [1] : [1, 2];
    out.push({ kind: flaky ? 'flaky' : 'work', event: { type: 'chaos.work', subject, data } });
  }
  return out;
}
