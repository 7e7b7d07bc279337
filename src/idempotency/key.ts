/**
 * The store key of one handler's effect for one event: `<handler name>:<event id>`.
 *
 * Built with `join`, which makes one flat string, rather than a template literal, which makes a
 * rope (a pair of pointers to the parts) that every hash lookup has to walk and that a store keeps
 * alive as two objects. In the memory store, full at 100,000 keys, template keys cost more than
 * twice the CPU per key and held twice the heap (docs/benchmarks.md, "Flat idempotency keys").
 */
export function idempotencyKey(handlerName: string, eventId: string): string {
  return [handlerName, eventId].join(':');
}
