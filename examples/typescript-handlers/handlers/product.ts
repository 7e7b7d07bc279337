/**
 * A TypeScript handler with a zod schema: `data` is validated (and reshaped) before `handle` runs,
 * and `handle` receives the schema's output type. An entry that does not fit dead-letters at once
 * with a message naming the field, since redelivering the same data can never succeed.
 * No build step: the worker loads .ts handlers through tsx.
 */
import * as z from 'zod';
import { defineHandler } from 'durable-worker';

/** Property list of the read shape -> `{ [id]: value }`. */
const properties = z.array(z.object({ id: z.string(), value: z.unknown() })).transform((items) => Object.fromEntries(items.map((p) => [p.id, p.value])));

/** What this handler needs of an entry; other properties pass through untouched. */
export const Product = z.object({
  name: z.string().min(1),
  price: z.number().positive(),
  inStock: z.boolean().default(true),
});
export type Product = z.infer<typeof Product>;

/** `source_entry.updated` data -> the product before (if any) and now. */
export const ProductChange = z.object({
  entryId: z.string(),
  previous: z.object({ properties: properties.pipe(Product.partial()) }).nullable(),
  current: z.object({ properties: properties.pipe(Product) }),
});

export default defineHandler({
  type: 'source_entry.updated',
  schema: ProductChange,
  timeoutMs: 5_000,
  async handle(event, ctx) {
    // Typed by the schema: event.data.current.properties is a Product.
    const product = event.data.current.properties;
    const before = event.data.previous?.properties.price;
    if (before !== undefined && product.price < before) {
      const dropPercent = Math.round((1 - product.price / before) * 100);
      ctx.log.info({ entryId: event.data.entryId, before, after: product.price, dropPercent }, `price drop on ${product.name}`);
    }
  },
});
