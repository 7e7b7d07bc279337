import { PerformanceObserver, constants } from 'node:perf_hooks';
import v8 from 'node:v8';
import type { Worker } from 'node:worker_threads';
import type { WorkerConfig } from '../config/types.js';
import { HANDLER_THREAD_YOUNG_GENERATION_MB } from '../dispatch/thread-heap.js';

const MiB = 1024 * 1024;

/**
 * The main thread's largest semi-space under `durable-worker run` with `--isolation thread`, MiB.
 * V8 lets it grow to 16 MiB (two of them: 32 MiB resident) on any host with 16 GB or more, and each
 * handler thread has a young generation of its own. With the handlers' garbage made on their own
 * threads, half of V8's bound costs the main thread no CPU and keeps its memory down; a quarter would
 * make it scavenge markedly more often for little memory saved.
 */
export const MAIN_SEMI_SPACE_MIB = 8;

/**
 * The same with `--isolation none`: no handler thread heaps, and the main thread runs every
 * handler. Each scavenge copies the events of the leases in flight, whatever the semi-space
 * size, so a larger one means fewer of them, and less time spent in them.
 */
export const IN_PROCESS_MAIN_SEMI_SPACE_MIB = 16;

/** The semi-space a handler thread may grow to (V8 makes a young generation three semi-spaces' worth). */
const HANDLER_THREAD_SEMI_SPACE_MIB = HANDLER_THREAD_YOUNG_GENERATION_MB / 3;

/**
 * How far an old generation may grow past what survived the last full collection before the next
 * one, as V8's `--heap-growing-percent` (100: to twice its live size). V8 allows up to 4x when the
 * heap limit is 2 GiB or more (any host with ~8 GB of memory or more), 1.3–2x below it. Twice the
 * live size keeps a worker's memory close to what it uses, whatever the host, for somewhat more
 * frequent full collections (felt with `thread`, where every handler thread has an old generation).
 */
export const OLD_GENERATION_GROWING_PERCENT = 100;

/** What {@link sizeRunHeaps} reads; the defaults are this process's. */
export interface HeapSizingInput {
  /** `--isolation`: the main thread's cap depends on it. Default `thread`. */
  isolation?: WorkerConfig['isolation'];
  execArgv?: readonly string[];
  /** NODE_OPTIONS. */
  nodeOptions?: string;
  heapSizeLimitBytes?: number;
}

/** Below this heap limit V8's own growth factor is already 2x or less: it is left alone. */
const LARGE_HEAP_LIMIT_BYTES = 2048 * MiB;

/**
 * Bounds the young generations of `durable-worker run`'s own process, which Node sizes from the
 * machine's memory (so the same worker would hold more on a larger host): the main thread's to {@link MAIN_SEMI_SPACE_MIB},
 * or {@link IN_PROCESS_MAIN_SEMI_SPACE_MIB} with `--isolation none`; and, on a heap limit of 2 GiB
 * or more, how far old generations grow between full collections ({@link OLD_GENERATION_GROWING_PERCENT}; a flag V8 reads
 * at run time, process-wide, so handler threads get it too). Does nothing when the user sized the
 * heaps with node flags (NODE_OPTIONS or the node command line); the growth bound is left alone
 * when the user set `--heap-growing-percent`. V8 fixes an isolate's limits when it creates it, so
 * for the main thread, already running, this works through the one flag V8 reads at run time
 * (see {@link capMainYoungGeneration}); worker threads started afterwards begin at the semi-space
 * size handler threads may grow to (src/dispatch/thread-heap.ts), so that a growth factor of 1 set
 * for the main thread never holds them smaller.
 * Returns what it did, for the log, and a function that stops it.
 */
export function sizeRunHeaps({
  isolation = 'thread',
  execArgv = process.execArgv,
  nodeOptions = process.env.NODE_OPTIONS ?? '',
  heapSizeLimitBytes = v8.getHeapStatistics().heap_size_limit,
}: HeapSizingInput = {}): { applied: boolean; mainSemiSpaceMiB?: number; threadSemiSpaceMiB?: number; oldGenerationGrowingPercent?: number; stop: () => void } {
  const userFlags = [...execArgv, nodeOptions].join(' ');
  if (/--(?:max|min)[-_]semi[-_]space[-_]size|--semi[-_]space[-_]growth[-_]factor/.test(userFlags)) {
    return { applied: false, stop: () => {} };
  }
  v8.setFlagsFromString(`--min-semi-space-size=${HANDLER_THREAD_SEMI_SPACE_MIB}`);
  const growth = heapSizeLimitBytes >= LARGE_HEAP_LIMIT_BYTES && !/--heap[-_]growing[-_]percent/.test(userFlags) ? OLD_GENERATION_GROWING_PERCENT : undefined;
  if (growth !== undefined) v8.setFlagsFromString(`--heap-growing-percent=${growth}`);
  const mainSemiSpaceMiB = isolation === 'none' ? IN_PROCESS_MAIN_SEMI_SPACE_MIB : MAIN_SEMI_SPACE_MIB;
  const stop = capMainYoungGeneration(mainSemiSpaceMiB);
  return {
    applied: true,
    mainSemiSpaceMiB,
    threadSemiSpaceMiB: HANDLER_THREAD_SEMI_SPACE_MIB,
    ...(growth === undefined ? {} : { oldGenerationGrowingPercent: growth }),
    stop,
  };
}

/**
 * Caps this thread's young generation at run time. What V8 reads at run time is
 * `--semi-space-growth-factor`: after a scavenge with enough survivors the new space grows by that
 * factor (2), so a factor of 1 stops it where it is. Found by experiment (Node 20, V8 11.3): the
 * flag is process-wide, and creating any isolate (a worker thread) resets a factor below 2 to 2
 * (V8's `Heap::ConfigureHeap`). So the factor is set after every scavenge of this thread and once
 * each new worker thread runs: 1 when one more doubling would pass the cap, else 2. The semi-space
 * then stops at the largest doubling of its first size within the cap. Returns a function that
 * stops doing so.
 */
export function capMainYoungGeneration(semiSpaceMiB: number): () => void {
  const capBytes = semiSpaceMiB * MiB;
  let factor = 0;
  const enforce = () => {
    const newSpace = v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space');
    // One semi-space's capacity: what is allocated in it plus what is left.
    const semiSpaceBytes = newSpace === undefined ? 0 : newSpace.space_used_size + newSpace.space_available_size;
    const wanted = semiSpaceBytes * 2 > capBytes ? 1 : 2;
    // 1 is set again each time: a worker thread started since may have reset it to 2.
    if (wanted === 1 || wanted !== factor) v8.setFlagsFromString(`--semi-space-growth-factor=${wanted}`);
    factor = wanted;
  };
  const observer = new PerformanceObserver((list) => {
    if (list.getEntries().some((entry) => (entry as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR)) enforce();
  });
  observer.observe({ entryTypes: ['gc'] });
  const onWorker = (worker: Worker) => worker.once('online', enforce);
  process.on('worker', onWorker);
  enforce();
  return () => {
    observer.disconnect();
    process.off('worker', onWorker);
  };
}
