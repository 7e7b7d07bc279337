import type { ResourceLimits } from 'node:worker_threads';
import v8 from 'node:v8';

const MiB = 1024 * 1024;

/**
 * The young generation of each handler thread, MB. V8 makes it three semi-spaces' worth (two
 * semi-spaces, plus as much as one again for new large objects), so 12 MB means 4 MiB semi-spaces.
 * Node sizes a worker thread's young generation from the machine's memory: 48 MB (16 MiB
 * semi-spaces, 32 MiB resident once used) on any host with 16 GB or more, for threads that only
 * receive events and report outcomes (docs/benchmarks.md, phase d).
 */
export const HANDLER_THREAD_YOUNG_GENERATION_MB = 12;

/**
 * The `resourceLimits` of handler threads: only the young generation is bounded. The old generation
 * keeps Node's limit, so a handler that holds much data has the heap it had. Below a 1 GiB heap
 * limit (a container with less than ~4 GB of memory, or `--max-old-space-size`) Node's own young
 * generation is already this size or smaller (V8: a semi-space per 256 MB of old generation), and
 * stays.
 */
export function handlerThreadResourceLimits(heapSizeLimitBytes: number = v8.getHeapStatistics().heap_size_limit): ResourceLimits | undefined {
  return heapSizeLimitBytes >= 1024 * MiB ? { maxYoungGenerationSizeMb: HANDLER_THREAD_YOUNG_GENERATION_MB } : undefined;
}
