// Variant 2: variant 1 through `ctx.tx`: the upsert and the done mark commit in one transaction.
import { defineHandler } from 'durable-worker';
import { writeOne } from '../../rows.mjs';

export default defineHandler({
  type: 'bench.event',
  transactional: true,
  async handle(event, ctx) {
    await writeOne(ctx.tx, event);
  },
});
