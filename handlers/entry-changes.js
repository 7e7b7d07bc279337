// The handler `durable-worker dev` runs by default (--handlers ./handlers): it logs what changed in
// each entry. Copy it, rename it, make it yours: every .js/.mjs/.ts file in this folder whose
// default export is made with defineHandler() is a handler.
import { defineHandler } from 'durable-worker';

/** Property id -> value of an entry in the read shape (null for a new entry's previous state). */
function valuesOf(entry) {
  return new Map((entry?.properties ?? []).map((property) => [property.id, property.value]));
}

export default defineHandler({
  type: 'source_entry.updated',
  async handle(event, ctx) {
    // data carries the entry before and after the ingest (previous is null for a new entry).
    const { sourceId, previous, current } = event.data;
    const before = valuesOf(previous);
    const changes = current.properties
      .filter((property) => JSON.stringify(before.get(property.id) ?? null) !== JSON.stringify(property.value))
      .map((property) => ({ property: property.id, from: before.get(property.id) ?? null, to: property.value }));
    ctx.log.info(
      { sourceId, entry: current.id, sequence: event.sequence, changes },
      previous === null ? `entry ${current.id} created` : `entry ${current.id} updated: ${changes.length} change(s)`,
    );
  },
});
