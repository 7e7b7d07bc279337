/**
 * A second handler for the same type: every matching handler runs, each with its own idempotency
 * key (`<handler name>:<event id>`). Without a schema the data is typed from the event type alone.
 */
import { defineHandler } from 'durable-worker';

export default defineHandler({
  type: 'source_entry.updated',
  async handle(event, ctx) {
    // event.data is SourceEntryUpdatedData: previous/current entries in the read shape.
    const changed = event.data.current.properties.map((p) => p.id);
    ctx.log.debug({ sourceId: event.data.sourceId, entryId: event.data.entryId, sequence: event.sequence, changed }, 'audit');
  },
});
