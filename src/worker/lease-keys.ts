import type { LoadedHandler } from '../handlers/loader.js';
import { chainOf } from '../idempotency/deferred.js';
import { idempotencyKey } from '../idempotency/key.js';
import type { ClaimState } from '../idempotency/store.js';
import type { CloudEvent, JobContext, LeaseBatch } from '../types.js';

/**
 * Where a lease's runs are: event i's handlers are `routes[i]`, and their `<handler>:<event id>`
 * keys are keys[keyStart[i] .. keyStart[i + 1]), in route order (one flat array: one store call
 * claims them all).
 */
export interface KeyLayout {
  readonly routes: (readonly LoadedHandler[])[];
  readonly keys: string[];
  readonly keyStart: Int32Array;
}

export function layOutKeys(events: readonly CloudEvent[], routeOf: (event: CloudEvent, index: number) => readonly LoadedHandler[]): KeyLayout {
  const count = events.length;
  const layout: KeyLayout = { routes: new Array(count), keys: [], keyStart: new Int32Array(count + 1) };
  for (let i = 0; i < count; i++) {
    const event = events[i] as CloudEvent;
    const route = routeOf(event, i);
    layout.routes[i] = route;
    layout.keyStart[i] = layout.keys.length;
    for (const handler of route) layout.keys.push(idempotencyKey(handler.name, event.id));
  }
  layout.keyStart[count] = layout.keys.length;
  return layout;
}

/** The (handler, subject) chains of the layout's runs, each once. */
export function chainsOf(layout: KeyLayout, events: readonly CloudEvent[]): string[] {
  const chains = new Set<string>();
  for (let i = 0; i < events.length; i++) for (const handler of layout.routes[i] ?? []) chains.add(chainOf(handler.name, (events[i] as CloudEvent).subject));
  return [...chains];
}

/** Event `index`'s keys that this lease claimed new (`claims` by key position): released when it does not run. */
export function newKeysOf(layout: KeyLayout, claims: readonly ClaimState[], index: number): string[] {
  const keys: string[] = [];
  for (let k = layout.keyStart[index] as number; k < (layout.keyStart[index + 1] as number); k++) if (claims[k] === 'new') keys.push(layout.keys[k] as string);
  return keys;
}

/** What every run of a lease is told of it (its job's ctx): attempt 1 for a run without failures behind it; HandlerRun gives the others their own. */
export function jobContextOf(pulled: LeaseBatch, workerId: string, leaseDeadlineMs: number): JobContext {
  return { attempt: 1, deliveryAttempt: pulled.attempt, generation: pulled.generation, workerId, leaseId: pulled.leaseId, leaseDeadlineMs };
}
