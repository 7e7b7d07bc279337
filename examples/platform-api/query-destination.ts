import { pathToFileURL } from 'node:url';
import { createDestinationClient, type DestinationQueryResponse } from 'durable-worker/client';

/**
 * Queries a destination with filters and facets:
 *   red or blue products under a price, in stock, newest first, with colour facet counts.
 *
 * Run: DESTINATION_GLOBAL_URL=http://127.0.0.1:8787 DESTINATION_CUSTOMER=acme DESTINATION_NAME=shop \
 *      [DESTINATION_CLIENT_ID=... DESTINATION_CLIENT_SECRET=...] node --import tsx examples/platform-api/query-destination.ts
 */
export interface QueryOptions {
  globalUrl: string;
  customer: string;
  destination: string;
  endpoint?: string;
  /** For a protected destination. */
  clientId?: string;
  clientSecret?: string;
  maxPrice?: number;
}

export interface ProductResult {
  id: string;
  name?: string;
  color?: string;
  price?: number;
}

export async function queryDestination(options: QueryOptions): Promise<DestinationQueryResponse<ProductResult>> {
  const destination = createDestinationClient({
    globalUrl: options.globalUrl,
    customer: options.customer,
    destination: options.destination,
    ...(options.clientId ? { clientId: options.clientId, clientSecret: options.clientSecret ?? '' } : {}),
  });
  try {
    // The POST form is needed for operators (LessThan) and must_not; GET only has equality filters.
    return await destination.post<ProductResult>(options.endpoint ?? 'products', {
      filter: [{ must: { color: ['red', 'blue'], price: { operator: 'LessThan', values: [options.maxPrice ?? 50] } }, must_not: { stock: [0] } }],
      select: ['id', 'name', 'color', 'price'],
      sortDesc: ['price'],
      includeTotals: true,
      top: 10,
    });
  } finally {
    await destination.close();
  }
}

async function main(): Promise<void> {
  const env = process.env;
  const answer = await queryDestination({
    globalUrl: env.DESTINATION_GLOBAL_URL ?? 'http://127.0.0.1:8787',
    customer: env.DESTINATION_CUSTOMER ?? 'acme',
    destination: env.DESTINATION_NAME ?? 'shop',
    ...(env.DESTINATION_CLIENT_ID ? { clientId: env.DESTINATION_CLIENT_ID, clientSecret: env.DESTINATION_CLIENT_SECRET ?? '' } : {}),
  });
  console.log(`${answer.total ?? answer.results.length} matching products (language ${answer.language})`);
  for (const product of answer.results) console.log(`  ${product.id}  ${product.name ?? ''}  ${product.color ?? ''}  ${product.price ?? ''}`);
  for (const facet of answer.facets ?? []) {
    console.log(`${facet.header}: ${facet.values.map((v) => `${v.key} (${v.count})`).join(', ')}`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exitCode = 1;
  });
}
