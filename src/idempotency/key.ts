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

/**
 * The mark that says how a key ended when it ended dead-lettered: written as a done mark in the
 * same `markDone` as the key's own (one statement, script or transaction in every store), so a key
 * whose own mark is done without it was applied. A handler name is a relative path, never starting
 * with `/`, so it meets no handler's key (nor a replay's, `/replay/...`).
 */
export function deadLetteredKey(key: string): string {
  return `/dead/${key}`;
}
