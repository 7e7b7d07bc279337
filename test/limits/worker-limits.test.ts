/**
 * The limits in the worker, against the emulator in this process: a rate shared by two workers on
 * one Redis store (a small version of bench/limits' rate scenario), and a concurrency cap with the
 * memory store. Waiting for a permit spends no attempt.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { busiestWindow as busiest, mostOverlapping } from '../../bench/limits/measure.js';
import { startWorker } from '../../src/worker/start.js';
import type { RunningWorker } from '../../src/worker/running-worker.js';
import { appendBehave, createConsumer, emulatorForFile, FAST, silent, tempDir, untilSettled, workerConfig } from '../worker/harness.js';

const HANDLERS = fileURLToPath(new URL('../fixtures/limits-handlers', import.meta.url));
const REDIS_URL = process.env.REDIS_URL;
const DATABASE_URL = process.env.DATABASE_URL;
const t = emulatorForFile();
const lines = (file: string) =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split(' ').map(Number))
    : [];
const workers: RunningWorker[] = [];
afterEach(async () => {
  for (const worker of workers.splice(0)) await worker.close();
});

describe('limits in the worker', () => {
  it.skipIf(REDIS_URL === undefined)(
    'two workers on one Redis store share a rate: never more than max starts in a window, every run at attempt 1',
    async () => {
      const destination = await createConsumer(t.emulator, 'limits');
      const dir = tempDir('limits-rate');
      const record = join(dir, 'runs.txt');
      const base = workerConfig(t.emulator, destination, dir, { handlersDir: HANDLERS, idempotencyUrl: REDIS_URL as string });
      for (let i = 0; i < 2; i++)
        workers.push(await startWorker({ ...base, workerIdPrefix: `${base.workerIdPrefix}-${i}` }, { logger: silent, timings: FAST }));
      appendBehave(
        t.emulator,
        40,
        () => ({ record }),
        (i) => `s-${i}`,
        'limits.rate',
      );
      await untilSettled(t.emulator, destination, base, 30_000);
      const runs = lines(record);
      expect(runs).toHaveLength(40);
      expect(runs.every(([, attempt]) => attempt === 1)).toBe(true);
      // 5 per 500 ms, one more allowed for a start that reaches its handler late.
      expect(
        busiest(
          runs.map(([startMs]) => startMs!),
          500,
        ),
      ).toBeLessThanOrEqual(6);
      const spanMs = Math.max(...runs.map(([s]) => s!)) - Math.min(...runs.map(([s]) => s!));
      expect(spanMs).toBeGreaterThanOrEqual(3_000); // 40 starts at 10 a second: the limit held them back
      expect(spanMs).toBeLessThanOrEqual(4_000 * 1.25 + 3_000);
    },
  );

  it.skipIf(DATABASE_URL === undefined)(
    "two workers on one PostgreSQL store share each key's rate: no subject over its limit in a window, every run at attempt 1",
    async () => {
      const destination = await createConsumer(t.emulator, 'limits');
      const dir = tempDir('limits-keyed');
      const record = join(dir, 'runs.txt');
      const base = workerConfig(t.emulator, destination, dir, { handlersDir: HANDLERS, idempotencyUrl: DATABASE_URL as string });
      for (let i = 0; i < 2; i++)
        workers.push(await startWorker({ ...base, workerIdPrefix: `${base.workerIdPrefix}-${i}` }, { logger: silent, timings: FAST }));
      appendBehave(
        t.emulator,
        40,
        () => ({ record }),
        (i) => `k${i % 4}`,
        'limits.keyed',
      );
      await untilSettled(t.emulator, destination, base, 30_000);
      const runs = readFileSync(record, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split(' '));
      expect(runs).toHaveLength(40);
      expect(runs.every(([, attempt]) => attempt === '1')).toBe(true);
      for (const subject of ['k0', 'k1', 'k2', 'k3']) {
        const starts = runs.filter(([, , s]) => s === subject).map(([startMs]) => Number(startMs));
        // 2 per 500 ms, one more allowed for a start that reaches its handler late (as the done-when's 3 for 2).
        expect(busiest(starts, 500), subject).toBeLessThanOrEqual(3);
        // 10 events at 2 per 500 ms: the limit held them back.
        expect(Math.max(...starts) - Math.min(...starts), subject).toBeGreaterThanOrEqual(2_000);
      }
    },
  );

  it('a concurrency cap: never more than N runs at once, every run at attempt 1', async () => {
    const destination = await createConsumer(t.emulator, 'limits');
    const dir = tempDir('limits-concurrency');
    const record = join(dir, 'runs.txt');
    const config = workerConfig(t.emulator, destination, dir, { handlersDir: HANDLERS });
    workers.push(await startWorker(config, { logger: silent, timings: FAST }));
    appendBehave(
      t.emulator,
      12,
      () => ({ record }),
      (i) => `c-${i}`,
      'limits.concurrency',
    );
    await untilSettled(t.emulator, destination, config, 30_000);
    const runs = lines(record);
    expect(runs).toHaveLength(12);
    expect(runs.every(([, , attempt]) => attempt === 1)).toBe(true);
    expect(mostOverlapping(runs.map(([start, end]) => [start!, end!] as const))).toBe(2);
  });
});
