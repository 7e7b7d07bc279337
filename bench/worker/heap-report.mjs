/**
 * Memory breakdown for phase d of bench/worker, with BENCH_HEAP_DETAIL=1: where a worker
 * process's RSS goes. Each handler thread answers `report` requests on a BroadcastChannel (the
 * benchmark's handler module joins it when it loads in a worker thread), so the per-thread heaps
 * are read without touching the framework or costing anything per event.
 */
import { readFileSync } from 'node:fs';
import { PerformanceObserver, constants } from 'node:perf_hooks';
import v8 from 'node:v8';
import { isMainThread, threadId } from 'node:worker_threads';

const CHANNEL = 'durable-worker-bench:heaps';
const mib = (n) => (n / 1048576).toFixed(1);

/** `new 16.0/3.1 old 40.0/30.2 code 2.0 lo 1.0` (committed/used MiB per V8 heap space; heapStatistics totals). */
export function heapSpaces() {
  const spaces = Object.fromEntries(v8.getHeapSpaceStatistics().map((s) => [s.space_name, s]));
  const space = (name) => spaces[name] ?? { space_size: 0, space_used_size: 0 };
  const pair = (name) => `${mib(space(name).space_size)}/${mib(space(name).space_used_size)}`;
  const large = space('large_object_space').space_size + space('new_large_object_space').space_size;
  const heap = v8.getHeapStatistics();
  return `new ${pair('new_space')} old ${pair('old_space')} code ${mib(space('code_space').space_size)} lo ${mib(large)} total ${mib(heap.total_heap_size)} malloced ${mib(heap.malloced_memory)}`;
}

/** `anon 120.3 file 40.1` MiB on Linux: RSS in private memory (heaps, malloc) vs mapped files (node's own code). */
export function rssKinds() {
  try {
    const status = readFileSync('/proc/self/status', 'utf8');
    const kib = (field) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
    return `anon ${mib(kib('RssAnon') * 1024)} file ${mib(kib('RssFile') * 1024)}`;
  } catch {
    return 'anon/file n/a';
  }
}

/**
 * This thread's garbage collections from now on: `gc minor 812/950ms major 6/41ms` (count and the
 * pauses' total; concurrent marking on helper threads is not in the pauses). A proxy for what a heap
 * setting costs that does not depend on how busy the machine's other tenants keep its cores.
 */
export function countCollections() {
  const totals = { minor: 0, minorMs: 0, major: 0, majorMs: 0 };
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = entry.detail?.kind;
      if (kind === constants.NODE_PERFORMANCE_GC_MINOR) {
        totals.minor++;
        totals.minorMs += entry.duration;
      } else if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) {
        totals.major++;
        totals.majorMs += entry.duration;
      }
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  return {
    reset: () => Object.assign(totals, { minor: 0, minorMs: 0, major: 0, majorMs: 0 }),
    summary: () => `gc minor ${totals.minor}/${totals.minorMs.toFixed(0)}ms major ${totals.major}/${totals.majorMs.toFixed(0)}ms`,
  };
}

/** In a handler thread: answer the main thread's requests with its heap spaces and its collections since it started. */
export function answerHeapRequests() {
  if (isMainThread) return;
  const collections = countCollections();
  const channel = new BroadcastChannel(CHANNEL);
  channel.onmessage = ({ data }) => {
    if (data === 'report') channel.postMessage({ threadId, spaces: `${heapSpaces()} ${collections.summary()}` });
  };
  // Never keeps a thread alive: piscina owns its lifetime.
  channel.unref();
}

/** In the main thread: every handler thread's heap spaces, as answered within `waitMs`. */
export async function threadHeaps(waitMs = 200) {
  const channel = new BroadcastChannel(CHANNEL);
  const answers = [];
  channel.onmessage = ({ data }) => {
    if (data !== 'report') answers.push(`thread ${data.threadId}: ${data.spaces}`);
  };
  channel.postMessage('report');
  await new Promise((resolve) => setTimeout(resolve, waitMs));
  channel.close();
  return answers.sort();
}
