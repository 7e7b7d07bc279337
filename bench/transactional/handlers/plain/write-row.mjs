// Variant 1: one upsert per event on a pool of the handler's own; the worker writes the done mark apart.
import { defineHandler } from 'durable-worker';
import { openPool, writeOne } from '../../rows.mjs';

const pool = openPool();

export default defineHandler({
  type: 'bench.event',
  async handle(event) {
    await writeOne(pool, event);
  },
});
