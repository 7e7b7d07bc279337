import type { ResourceLimits } from 'node:worker_threads';
import v8 from 'node:v8';

const MiB = 1024 * 1024;

/**
 * The young generation of each handler thread, MB. V8 makes it three semi-spaces' worth (two
 * semi-spaces, plus as much as one again for new large objects), so 24 MB means 8 MiB semi-spaces.
 * Node sizes a worker thread's young generation from the machine's memory: 48 MB (16 MiB
 * semi-spaces, 32 MiB resident once used) on any host with 16 GB or more. Half of that costs no
 * speed; smaller still costs CPU per event: a thread holds the events of its lanes across
 * scavenges, so smaller semi-spaces copy them more often (docs/benchmarks.md#memory).
 */
export const HANDLER_THREAD_YOUNG_GENERATION_MB = 24;

/**
 * The `resourceLimits` of handler threads: only the young generation is bounded. The old generation
 * keeps Node's limit, so a handler that holds much data has the heap it had. Below a 2 GiB heap
 * limit (less than ~8 GB of memory, a container's limit included, or `--max-old-space-size`) Node's
 * own young generation is already this size or smaller (V8: a MiB of semi-space per 256 MB of old
 * generation), and stays.
 */
export function handlerThreadResourceLimits(heapSizeLimitBytes: number = v8.getHeapStatistics().heap_size_limit): ResourceLimits | undefined {
  return heapSizeLimitBytes >= 2048 * MiB ? { maxYoungGenerationSizeMb: HANDLER_THREAD_YOUNG_GENERATION_MB } : undefined;
}
