/**
 * `npm run test:quick` (vitest.quick.config.ts) selects the unit tests: the scheduler, lease and run
 * tests on the fake clock are in it, and no file that starts the emulator, a worker or a process is.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import quick from '../../vitest.quick.config.js';

describe('test:quick', () => {
  const include = (quick as { test?: { include?: string[] } }).test?.include ?? [];

  it('holds the unit tests of the run path', () => {
    for (const file of ['scheduler', 'held-lease', 'lease-event', 'pull-controller', 'parked-events', 'subject-order'].map(
      (name) => `test/worker/${name}.test.ts`,
    ))
      expect(include).toContain(file);
    expect(include.length).toBeGreaterThan(50);
  });

  it('holds no file that starts the emulator, a worker, a process or a server', () => {
    for (const file of ['test/worker/isolation.test.ts', 'test/docs/one-lease-steps.test.ts', 'test/cli/deferred.test.ts']) expect(include).not.toContain(file);
    for (const file of include) expect(readFileSync(file, 'utf8'), file).not.toMatch(/startEmulator\(|startWorker\(|spawn\(/);
  });
});
