import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { appendEffectEvents, readEffects, runArgs, summarize } from '../scale/effects.js';
import { consumerState, createConsumer, tempDir, waitFor } from '../worker/harness.js';
import { CliProcess } from './cli-process.js';

/**
 * SIGTERM while an ack is in flight and the platform does not answer it (the emulator's latency fault
 * on `ack`): the drain must not wait for the answer, nor for the lease (10 minutes) to expire.
 * At the forced shutdown (`--shutdown-timeout`) the unanswered ack is abandoned and the process exits
 * 0. The platform still holds the lease; a restart with the same worker ids gets it back at once, and
 * the done marks stored before the ack keep every effect single.
 */
let emulator: RunningEmulator;
const children: CliProcess[] = [];

beforeAll(async () => {
  emulator = await startEmulator({ port: 0 });
});
afterEach(() => {
  emulator.faults.clear();
  for (const child of children.splice(0)) child.kill('SIGKILL');
});
afterAll(async () => {
  await emulator?.close();
});

function start(args: string[], effectsFile: string): CliProcess {
  const child = new CliProcess(args, { env: { DW_TEST_EFFECTS_FILE: effectsFile } });
  children.push(child);
  return child;
}

describe('durable-worker run: SIGTERM with an ack the platform never answers', () => {
  it('exits 0 at the forced shutdown, abandoning the ack; the restart gets the lease back and runs no effect twice', async () => {
    const dir = tempDir('hung-ack');
    const effects = join(dir, 'effects.log');
    const destination = await createConsumer(emulator, 'hung-ack');
    const ids = appendEffectEvents(emulator, 20);
    const args = runArgs(emulator, destination, dir, {
      workers: 1,
      limit: 20,
      visibility: 600,
      'shutdown-timeout': 1,
      isolation: 'none',
      idempotency: `sqlite:${join(dir, 'idempotency.sqlite')}`,
      'worker-id-prefix': 'hung-ack',
      'log-level': 'info',
    });
    // Every ack waits a minute (the fault's longest) before the emulator even reads it: a platform that hangs.
    emulator.faults.set({ latencyMs: 60_000, latencyRoutes: ['ack'] });

    const first = start(args, effects);
    await waitFor('the batch handled (its ack is then on its way)', () => readEffects(effects).length === ids.length, 60_000);
    expect(consumerState(emulator, destination).leased).toBe(ids.length);
    first.kill('SIGTERM');
    // Held by the ack, the process would exit when the ack is answered, a minute from now.
    await waitFor('the process to exit', () => first.child.exitCode !== null || first.child.signalCode !== null, 30_000, 100);
    const result = await first.exited;
    expect(result.code, result.stderr).toBe(0);
    const logged = result.stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line) as { msg: string; sent?: string });
    expect(logged.map((l) => l.msg)).toContain('shutdown timeout: aborting events still in flight');
    expect(logged.find((l) => l.msg.startsWith('acknowledge failed (forced shutdown: the ack was abandoned)'))).toMatchObject({ sent: 'ok' });
    // Abandoned, not acked: the lease is still the platform's until it expires.
    expect(consumerState(emulator, destination)).toMatchObject({ leased: ids.length, committed: null });

    emulator.faults.clear();
    const second = start([...args, '--exit-when-idle'], effects);
    const secondResult = await second.exited;
    expect(secondResult.code, secondResult.stderr).toBe(0);
    const summary = summarize(readEffects(effects), ids);
    expect(summary.missing).toEqual([]);
    expect(summary.extraEffects).toBe(0);
    const state = consumerState(emulator, destination);
    expect(state.committed).toBe(state.head);
    expect(state.leased).toBe(0);
  }, 90_000);
});
