import { MemoryDeferredRuns } from '../../src/idempotency/memory-deferred.js';
import { MemoryIdempotencyStore } from '../../src/idempotency/memory.js';
import { deferredContract } from './deferred-contract.js';

deferredContract('memory', async () => {
  const store = new MemoryIdempotencyStore({ doneTtlMs: 86_400_000 });
  // The memory store has no deferred runs of its own: the reference sits beside it, told which
  // keys are done through the marks the test makes.
  const done = new Set<string>();
  const markDone = store.markDone.bind(store);
  store.markDone = async (keys) => {
    for (const key of keys) done.add(key);
    await markDone(keys);
  };
  const deferred = new MemoryDeferredRuns({
    release: (keys, owner) => void store.release(keys, owner),
    isDone: (key) => done.has(key),
  });
  return { store, deferred };
});
