/**
 * The store key of one handler's effect for one event: `<handler name>:<event id>`.
 *
 * Built with `join`, which makes one flat string, rather than a template literal, which makes a
 * rope (a pair of pointers to the parts) that every hash lookup has to walk and that a store keeps
 * alive as two objects: a full memory store would pay for that on every lookup and in its heap.
 */
export function idempotencyKey(handlerName: string, eventId: string): string {
  return [handlerName, eventId].join(':');
}
