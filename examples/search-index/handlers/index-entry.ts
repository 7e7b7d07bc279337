/**
 * Keeps a search service's documents in step with the entries of every source: one `PUT
 * {SEARCH_URL}/documents/{entry id}` per `source_entry.updated` event, with the entry's properties.
 *
 * What the answer means for the event (handlers say what happened, the worker acks):
 * 2xx -> ok; 429, 5xx or no answer -> throw (the event is retried, then dead-lettered at
 * --max-attempts); any other 4xx -> PermanentError (the same request can never succeed:
 * dead-lettered at once). The request carries `ctx.signal`, so it is cut at the lease deadline.
 *
 * The service's base URL and key are read once, in `setup`: a worker without them never becomes
 * ready (and `durable-worker check --setup` says why) instead of failing every event.
 */
import { defineHandler, PermanentError } from 'durable-worker';

export default defineHandler({
  type: 'source_entry.updated',
  setup() {
    const url = process.env.SEARCH_URL;
    if (url === undefined || url === '') throw new Error('SEARCH_URL is not set (base URL of the search service)');
    return { documents: new URL('documents/', url.endsWith('/') ? url : `${url}/`), apiKey: process.env.SEARCH_API_KEY };
  },
  async handle(event, ctx) {
    const { documents, apiKey } = ctx.resources;
    const { sourceId, entryId, current } = event.data;
    const response = await fetch(new URL(encodeURIComponent(entryId), documents), {
      method: 'PUT',
      headers: { 'content-type': 'application/json', ...(apiKey === undefined ? {} : { authorization: `Bearer ${apiKey}` }) },
      // The sequence lets the service drop an older update that arrives late (it stays a string: it may exceed 2^53).
      body: JSON.stringify({ sourceId, sequence: event.sequence, fields: Object.fromEntries(current.properties.map((p) => [p.id, p.value])) }),
      signal: ctx.signal,
    });
    // Read (or drop) the body either way: an unread body holds its connection.
    const detail = (await response.text()).slice(0, 200);
    if (response.ok) return;
    if (response.status === 429 || response.status >= 500) throw new Error(`search service answered ${response.status} for ${entryId}: ${detail}`);
    throw new PermanentError(`search service refused ${entryId} (${response.status}): ${detail}`);
  },
});
