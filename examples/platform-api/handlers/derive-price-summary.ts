import { createClient, defineHandler, isRetryable, PermanentError, type PlatformClient } from 'durable-worker';

/**
 * On `source_entry.updated` of the `products` source: read the entry through the client (the event
 * may be older than the entry; the read gives its current state), then write a derived entry to
 * `product-summaries`: the price with VAT in cents and a one-line label.
 *
 * Handlers get no client in their context: the module builds one from the same environment
 * variables the worker reads (DURABLE_WORKER_BASE_URL, _TENANT, _CLIENT_ID, _CLIENT_SECRET, or
 * _API_KEY), once per module instance, i.e. once per worker thread. The token is cached inside.
 */
export const SOURCE = process.env.EXAMPLE_SOURCE ?? 'products';
export const TARGET = process.env.EXAMPLE_TARGET ?? 'product-summaries';
const VAT = 0.25;

let client: PlatformClient | undefined;

function platform(): PlatformClient {
  const env = process.env;
  if (!env.DURABLE_WORKER_BASE_URL) throw new PermanentError('DURABLE_WORKER_BASE_URL is not set: the handler cannot reach the platform');
  client ??= createClient({
    baseUrl: env.DURABLE_WORKER_BASE_URL,
    ...(env.DURABLE_WORKER_AUTH_URL ? { authUrl: env.DURABLE_WORKER_AUTH_URL } : {}),
    ...(env.DURABLE_WORKER_API_KEY
      ? { apiKey: env.DURABLE_WORKER_API_KEY }
      : { tenant: env.DURABLE_WORKER_TENANT, clientId: env.DURABLE_WORKER_CLIENT_ID, clientSecret: env.DURABLE_WORKER_CLIENT_SECRET }),
  });
  return client;
}

export default defineHandler({
  type: 'source_entry.updated',
  async handle(event, ctx) {
    // Writing to TARGET emits source_entry.updated too: only SOURCE events are ours, or we would loop.
    if (event.data.sourceId !== SOURCE) return;
    const api = platform();
    const entry = await api.getEntry(SOURCE, event.data.entryId, { signal: ctx.signal });
    const value = (id: string) => entry.properties.find((p) => p.id === id && (p.language === null || p.language === 'en'))?.value ?? null;
    const name = value('name');
    const price = value('price');
    if (typeof price !== 'number') {
      ctx.log.warn({ entryId: entry.id }, 'product without a numeric price: no summary');
      return;
    }
    // Whole cents, not a fraction: the first value written infers the property's type for good
    // (spec, typed ingest rule 7), and a first 25 would make a later 5.5 an Integer mismatch.
    const grossCents = Math.round(price * (1 + VAT) * 100);
    const label = `${String(name ?? entry.id)}: ${(grossCents / 100).toFixed(2)} incl. VAT`;
    try {
      // An upsert by entry ID: a redelivered event writes the same summary again, harmlessly.
      await api.ingest(
        TARGET,
        {
          entries: [
            {
              id: entry.id,
              properties: [
                { id: 'grossPriceCents', value: grossCents },
                { id: 'label', value: label },
              ],
            },
          ],
        },
        { signal: ctx.signal },
      );
    } catch (err) {
      // 429/5xx/network were already retried inside the client; what is left and not retryable
      // (a 400, a 403) will fail the same way on every redelivery: dead-letter it at once.
      if (!isRetryable(err)) throw new PermanentError(`summary of ${entry.id} refused: ${(err as Error).message}`, { cause: err });
      throw err;
    }
    ctx.log.info({ entryId: entry.id, grossCents }, 'summary written');
  },
});
