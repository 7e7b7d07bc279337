// Variant 3: one multi-row upsert per call on a pool of the handler's own; done marks written apart.
import { defineBatchHandler } from 'durable-worker';
import { openPool, writeMany } from '../../rows.mjs';

export default defineBatchHandler({
  type: 'bench.event',
  maxBatchSize: 100,
  async setup() {
    return { pool: openPool() };
  },
  async handleBatch(events, ctx) {
    await writeMany(ctx.resources.pool, events);
  },
  async teardown(ctx) {
    await ctx.resources.pool.end();
  },
});
