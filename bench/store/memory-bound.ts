/**
 * The memory store once it is full: every new key evicts the least recently used one. Claims and
 * marks done batches of 100 fresh keys (event ids are random UUIDs), as a worker does, and prints
 * the store's µs per key over each 100,000 keys, so the first line (not yet full) compares with the
 * ones after it.
 *
 *   node --import tsx bench/store/memory-bound.ts [--keys 500000] [--max-entries 100000]
 */
import { parseArgs } from 'node:util';
import { idempotencyKey } from '../../src/idempotency/key.js';
import { MemoryIdempotencyStore } from '../../src/idempotency/memory.js';

const { values } = parseArgs({ options: { keys: { type: 'string', default: '500000' }, 'max-entries': { type: 'string', default: '100000' } } });
const keys = Number(values.keys);
const maxEntries = Number(values['max-entries']);
const store = new MemoryIdempotencyStore({ doneTtlMs: 3_600_000, maxEntries });
const batchSize = 100;
const reportEvery = 100_000;
let storeMs = 0;
for (let written = 0; written < keys;) {
  const batch = Array.from({ length: batchSize }, () => idempotencyKey('work', crypto.randomUUID()));
  const started = performance.now();
  await store.claim(batch, 'bench', 60_000);
  await store.markDone(batch);
  storeMs += performance.now() - started;
  written += batchSize;
  if (written % reportEvery === 0) {
    const size = `store ${store.size.toLocaleString('en-US')} of ${maxEntries.toLocaleString('en-US')}`;
    console.log(`keys ${written - reportEvery}-${written} (${size}): ${((storeMs * 1000) / reportEvery).toFixed(2)} µs per key (claim + mark done)`);
    storeMs = 0;
  }
}
await store.close();
