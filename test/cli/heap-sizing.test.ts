import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import v8 from 'node:v8';
import { describe, expect, it } from 'vitest';
import { IN_PROCESS_MAIN_SEMI_SPACE_MIB, MAIN_SEMI_SPACE_MIB, OLD_GENERATION_GROWING_PERCENT, sizeRunHeaps } from '../../src/cli/heap-sizing.js';
import { HANDLER_THREAD_YOUNG_GENERATION_MB, handlerThreadResourceLimits } from '../../src/dispatch/thread-heap.js';
import { REPO_ROOT } from './cli-process.js';

const TSX = pathToFileURL(createRequire(join(REPO_ROOT, 'package.json')).resolve('tsx')).href;
const PROBE = join(REPO_ROOT, 'test', 'fixtures', 'heap-sizing', 'young-generation-probe.ts');
const OLD_GENERATION_PROBE = join(REPO_ROOT, 'test', 'fixtures', 'heap-sizing', 'old-generation-probe.ts');
const MiB = 1024 * 1024;

/** The main thread's new space (both semi-spaces, MiB) after the probe's allocations, in its own process. */
async function probeNewSpaceMiB(cap: number | 'thread' | 'none'): Promise<number> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', TSX, PROBE, String(cap)], { cwd: REPO_ROOT });
  return (JSON.parse(stdout) as { newSpaceMiB: number }).newSpaceMiB;
}

interface OldGenerationProbe {
  oldSpaceMiB: number;
  fullCollections: number;
  heapLimitMiB: number;
  growingPercent?: number;
}

/** The largest old space of a process that keeps a rolling set of objects alive (see the probe). */
async function probeOldGeneration(mode: 'four-times' | 'sized' | 'user-flag'): Promise<OldGenerationProbe> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', TSX, OLD_GENERATION_PROBE, mode], { cwd: REPO_ROOT });
  return JSON.parse(stdout) as OldGenerationProbe;
}

describe('heap sizing of `durable-worker run` (docs/benchmarks.md, phase d)', () => {
  it("lets old generations grow to twice their live size, not V8's 4x, where the heap limit is 2 GiB or more", async () => {
    const [fourTimes, sized, userFlag] = await Promise.all([probeOldGeneration('four-times'), probeOldGeneration('sized'), probeOldGeneration('user-flag')]);
    // The user's --heap-growing-percent wins.
    expect(userFlag.growingPercent).toBeUndefined();
    if (fourTimes.heapLimitMiB >= 2048) {
      expect(sized.growingPercent).toBe(OLD_GENERATION_GROWING_PERCENT);
      // Against V8's largest factor, set outright: V8's own choice up to it varies with the machine's
      // load. The count of full collections is what holds apart under load; the largest old space
      // only has to be smaller (docs/benchmarks.md, phase d, `--heap-growing-percent`).
      expect(sized.fullCollections).toBeGreaterThan(fourTimes.fullCollections);
      expect(sized.oldSpaceMiB).toBeLessThan(fourTimes.oldSpaceMiB);
    } else {
      // A small host or a container: V8's factor is 2x or less already.
      expect(sized.growingPercent).toBeUndefined();
    }
  });

  it('caps the main thread young generation at run time, also after a worker thread started', async () => {
    // Without the cap V8 grows it to 2 x 16 MiB on this size of host; the probe's allocations get it there.
    const [uncapped, capped] = await Promise.all([probeNewSpaceMiB(0), probeNewSpaceMiB(4)]);
    expect(capped).toBeLessThanOrEqual(2 * 4);
    // On a small host V8's own limit may be below the cap already.
    if (v8.getHeapStatistics().heap_size_limit >= 2048 * MiB) expect(uncapped).toBeGreaterThan(capped);
  });

  it('caps the main thread at 8 MiB semi-spaces with handler threads, 16 MiB without (--isolation none)', async () => {
    const [thread, none] = await Promise.all([probeNewSpaceMiB('thread'), probeNewSpaceMiB('none')]);
    expect(thread).toBeLessThanOrEqual(2 * MAIN_SEMI_SPACE_MIB);
    expect(none).toBeLessThanOrEqual(2 * IN_PROCESS_MAIN_SEMI_SPACE_MIB);
    // The probe grows an uncapped new space to 2 x 16 MiB where V8 allows that much.
    if (v8.getHeapStatistics().heap_size_limit >= 2048 * MiB) expect(none).toBeGreaterThan(thread);
  });

  it('leaves the heaps alone when the user sized them with node flags', () => {
    const result = sizeRunHeaps({ execArgv: ['--max-semi-space-size=2'], nodeOptions: '' });
    expect(result.applied).toBe(false);
    expect(sizeRunHeaps({ execArgv: [], nodeOptions: '--max-old-space-size=128 --max-semi-space-size=1' }).applied).toBe(false);
  });

  it('bounds the handler threads young generation only where Node would make it larger', () => {
    expect(handlerThreadResourceLimits(4144 * MiB)).toEqual({ maxYoungGenerationSizeMb: HANDLER_THREAD_YOUNG_GENERATION_MB });
    // A 512 MiB container: Node gives a 259 MiB heap limit and 3 MB young generations already;
    // a 6 GB host 1.5 GiB and 18 MB.
    expect(handlerThreadResourceLimits(259 * MiB)).toBeUndefined();
    expect(handlerThreadResourceLimits(1536 * MiB)).toBeUndefined();
  });
});
