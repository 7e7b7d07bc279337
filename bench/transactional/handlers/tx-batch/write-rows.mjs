// Variant 4: variant 3 through `ctx.tx`: a call's upsert and its events' done marks in one transaction.
import { defineBatchHandler } from 'durable-worker';
import { writeMany } from '../../rows.mjs';

export default defineBatchHandler({
  type: 'bench.event',
  maxBatchSize: 100,
  transactional: true,
  async handleBatch(events, ctx) {
    await writeMany(ctx.tx, events);
  },
});
