import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { FORCED_ACK_GRACE_MS } from '../../src/worker/lease-ack.js';
import { openSqlite } from '../../src/sqlite/index.js';
import { appendEffectEvents, readEffects, runArgs, summarize } from '../scale/effects.js';
import { startedRuns } from '../fixtures/spans.js';
import { appendBehave, BEHAVIOURS, consumerState, createConsumer, records, tempDir, waitFor } from '../worker/harness.js';
import { CliProcess } from './cli-process.js';

/**
 * Issue 3, done-when: `durable-worker run` as a real child process, with a handler whose effect is
 * a line appended to a file. SIGTERM mid-run drains and leaves no lease behind; SIGKILL mid-run
 * then a restart with the same SQLite store and worker ids loses nothing, and re-runs only effects
 * whose done mark the kill cut off: the events in flight, running or finished within the few
 * milliseconds before their done mark's group commit (never more than the leased batches hold).
 * SIGTERM while the platform does not answer an ack (the emulator's latency fault on `ack`): the
 * drain waits neither for the answer nor for the lease; the ack is abandoned at the forced shutdown.
 * Issue 21: SIGKILL while the process holds several leases; the restart (same prefix, so the same
 * workerIds) pulls them back at once instead of waiting for them to expire.
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

/** Keys (`<handler>:<event id>`) a SQLite idempotency store file holds as done (read-only look). */
function doneKeys(path: string): Set<string> {
  const db = openSqlite(path, { readOnly: true });
  try {
    return new Set(
      db
        .prepare<[], { key: string }>('SELECT key FROM durable_worker_done')
        .all()
        .map((row) => row.key),
    );
  } finally {
    db.close();
  }
}

/** Claims still held in a SQLite idempotency store file (read-only look). */
function claimedRows(path: string): number {
  const db = openSqlite(path, { readOnly: true });
  try {
    return (db.prepare<[], { n: number }>('SELECT count(*) AS n FROM durable_worker_claims').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

function start(args: string[], effectsFile: string, delayMs: number): CliProcess {
  const child = new CliProcess(args, { env: { DW_TEST_EFFECTS_FILE: effectsFile, DW_TEST_EFFECT_DELAY_MS: String(delayMs) } });
  children.push(child);
  return child;
}

/** A restart with `--exit-when-idle` finishes every event, runs no effect a second time, and commits to the head. */
async function restartRunsNothingTwice(args: string[], effects: string, ids: string[], destination: string): Promise<void> {
  const second = start([...args, '--exit-when-idle'], effects, 0);
  const secondResult = await second.exited;
  expect(secondResult.code, secondResult.stderr).toBe(0);
  const summary = summarize(readEffects(effects), ids);
  expect(summary.missing).toEqual([]);
  expect(summary.extraEffects).toBe(0);
  const state = consumerState(emulator, destination);
  expect(state.committed).toBe(state.head);
  expect(state.leased).toBe(0);
}

describe('durable-worker run: kill and restart', () => {
  it('SIGTERM mid-run: exits 0 with no lease held; the restart re-runs no effect', async () => {
    const dir = tempDir('sigterm');
    const effects = join(dir, 'effects.log');
    const destination = await createConsumer(emulator, 'sigterm');
    const { ids } = appendEffectEvents(emulator, 1_500);
    const args = runArgs(emulator, destination, dir, {
      workers: 2,
      limit: 50,
      concurrency: 8,
      isolation: 'thread',
      idempotency: `sqlite:${join(dir, 'idempotency.sqlite')}`,
      'worker-id-prefix': 'sigterm',
    });

    const first = start(args, effects, 20);
    await waitFor('effects before SIGTERM', () => readEffects(effects).length >= 100, 60_000);
    first.kill('SIGTERM');
    const firstResult = await first.exited;
    expect(firstResult.code, firstResult.stderr).toBe(0);
    // Drained: batches in hand were acked (unfinished ones `failed`, for redelivery), none is left leased.
    const afterDrain = consumerState(emulator, destination);
    expect(afterDrain.leased).toBe(0);
    // ...and no idempotency claim: events in flight were marked done, the unstarted ones released,
    // so the redelivery (a new generation, another claim owner) need not wait for them to expire.
    expect(claimedRows(join(dir, 'idempotency.sqlite'))).toBe(0);
    expect(readEffects(effects).length).toBeLessThan(ids.length);

    // A drain stores every done mark before its ack: nothing runs twice.
    await restartRunsNothingTwice(args, effects, ids, destination);
  }, 150_000);

  it('SIGKILL mid-run, restart with the same SQLite store and prefix: nothing lost, duplicates bounded by the events in flight', async () => {
    const dir = tempDir('sigkill');
    const effects = join(dir, 'effects.log');
    const destination = await createConsumer(emulator, 'sigkill');
    const { ids } = appendEffectEvents(emulator, 3_000);
    const workers = 2;
    const limit = 50;
    const args = runArgs(emulator, destination, dir, {
      workers,
      limit,
      concurrency: 8,
      isolation: 'thread',
      idempotency: `sqlite:${join(dir, 'idempotency.sqlite')}`,
      'worker-id-prefix': 'sigkill',
    });

    const first = start(args, effects, 5);
    await waitFor('effects before SIGKILL', () => readEffects(effects).length >= 500, 60_000);
    first.kill('SIGKILL');
    const firstResult = await first.exited;
    expect(firstResult.signal).toBe('SIGKILL');
    const beforeRestart = readEffects(effects);
    expect(beforeRestart.length).toBeLessThan(ids.length);
    // In flight at the kill: effects written whose done mark was not committed (the handler is `append`).
    const done = doneKeys(join(dir, 'idempotency.sqlite'));
    const inFlightAtKill = new Set(beforeRestart.map((effect) => effect.eventId).filter((id) => !done.has(`append:${id}`)));
    expect(inFlightAtKill.size).toBeLessThanOrEqual(workers * limit);
    // Its leases stay held until they expire (60 s); the restart's same worker ids get them back at once.

    const second = start([...args, '--exit-when-idle'], effects, 0);
    const secondResult = await second.exited;
    expect(secondResult.code, secondResult.stderr).toBe(0);

    const all = readEffects(effects);
    const summary = summarize(all, ids);
    expect(summary.missing).toEqual([]);
    // Only events in flight at the kill run again, each first run by the killed process and once more
    // by the restart: an effect whose done mark was committed never runs twice.
    const firstPid = first.child.pid;
    const secondPid = second.child.pid;
    for (const [eventId, pids] of summary.duplicated) {
      expect({ eventId, pids, inFlightAtKill: inFlightAtKill.has(eventId) }).toEqual({ eventId, pids: [firstPid, secondPid], inFlightAtKill: true });
    }
    expect(summary.extraEffects).toBeLessThanOrEqual(inFlightAtKill.size);
    const state = consumerState(emulator, destination);
    expect(state.committed).toBe(state.head);
    expect(state.leased).toBe(0);
  }, 150_000);

  it('SIGKILL with several leases held: the restart pulls them back under the same workerIds at once, long before they would expire', async () => {
    const dir = tempDir('sigkill-held');
    const record = join(dir, 'effects.log');
    const gateFile = join(dir, 'gate');
    const startedFile = join(dir, 'started.log');
    const destination = await createConsumer(emulator, 'sigkill-held');
    // Leases of five, every event a gate: eight running events span at least two leases.
    const events = appendBehave(emulator, 15, () => ({ behaviour: 'gate', gateFile, startedFile, record }));
    const args = runArgs(emulator, destination, dir, {
      workers: 1,
      limit: 5,
      concurrency: 8,
      // Ten minutes: a restart that waited for the killed process's leases to expire would not finish.
      visibility: 600,
      isolation: 'none',
      idempotency: `sqlite:${join(dir, 'idempotency.sqlite')}`,
      'worker-id-prefix': 'sigkill-held',
    });
    args[args.indexOf('--handlers') + 1] = BEHAVIOURS;

    const first = start(args, join(dir, 'unused.log'), 0);
    await waitFor('eight gates running', () => startedRuns(startedFile) === 8, 60_000);
    first.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    const held = consumerState(emulator, destination).leased;
    expect(held).toBeGreaterThanOrEqual(10);

    writeFileSync(gateFile, '');
    const second = start([...args, '--exit-when-idle'], join(dir, 'unused.log'), 0);
    const result = await second.exited;
    expect(result.code, result.stderr).toBe(0);
    // Every event ran to success, and the consumer is at its head with nothing leased: the held leases
    // came back to the restart (a pull by the same workerId returns its lease), none was left to expire.
    expect(new Set(records(record).map((line) => line.eventId))).toEqual(new Set(events.map((e) => e.id)));
    const state = consumerState(emulator, destination);
    expect(state).toMatchObject({ leased: 0, pendingRedelivery: 0 });
    expect(state.committed).toBe(state.head);
  }, 90_000);

  const SHUTDOWN_TIMEOUT_SECONDS = 1;
  const EXIT_MARGIN_MS = 5_000;

  it('SIGTERM with an ack the platform never answers: exits 0 at the forced shutdown, abandoning the ack; the restart gets the lease back and runs no effect twice', async () => {
    const dir = tempDir('hung-ack');
    const effects = join(dir, 'effects.log');
    const destination = await createConsumer(emulator, 'hung-ack');
    const { ids } = appendEffectEvents(emulator, 20);
    const args = runArgs(emulator, destination, dir, {
      workers: 1,
      limit: 20,
      visibility: 600,
      'shutdown-timeout': SHUTDOWN_TIMEOUT_SECONDS,
      isolation: 'none',
      idempotency: `sqlite:${join(dir, 'idempotency.sqlite')}`,
      'worker-id-prefix': 'hung-ack',
      'log-level': 'info',
    });
    // Every ack waits a minute (the fault's longest) before the emulator even reads it: a platform that hangs.
    emulator.faults.set({ latencyMs: 60_000, latencyRoutes: ['ack'] });

    const first = start(args, effects, 0);
    await waitFor('the batch handled (its ack is then on its way)', () => readEffects(effects).length === ids.length, 60_000);
    expect(consumerState(emulator, destination).leased).toBe(ids.length);
    const signalledAtMs = performance.now();
    first.kill('SIGTERM');
    // Held by the ack, the process would exit when the ack is answered, a minute from now. It must
    // leave at the forced shutdown instead: --shutdown-timeout (src/worker/start.ts aborts what is
    // still running), then FORCED_ACK_GRACE_MS for the ack in flight (src/worker/lease-ack.ts), then
    // the margin. The margin covers what follows the abandoned ack: closing the local resources
    // (client, SQLite store, file sink, metrics server: milliseconds when the machine is idle), the
    // process's own exit and this test's 100 ms poll; on a loaded two-core CI runner a child's event
    // loop can stall for seconds, hence a generous margin that still fails long before the hung
    // ack's minute would end.
    const boundMs = SHUTDOWN_TIMEOUT_SECONDS * 1_000 + FORCED_ACK_GRACE_MS + EXIT_MARGIN_MS;
    await waitFor('the process to exit', () => first.child.exitCode !== null || first.child.signalCode !== null, 30_000, 100);
    const exitedAfterMs = performance.now() - signalledAtMs;
    expect(exitedAfterMs, `exited ${Math.round(exitedAfterMs)} ms after SIGTERM, bound ${boundMs} ms`).toBeLessThan(boundMs);
    // And not before the shutdown timeout: the drain waited as long as it was told to.
    expect(exitedAfterMs).toBeGreaterThanOrEqual(SHUTDOWN_TIMEOUT_SECONDS * 1_000);
    const result = await first.exited;
    expect(result.code, result.stderr).toBe(0);
    const logged = result.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { msg: string; sent?: string });
    expect(logged.map((l) => l.msg)).toContain('shutdown timeout: aborting events still in flight');
    expect(logged.find((l) => l.msg.startsWith('acknowledge failed (forced shutdown: the ack was abandoned)'))).toMatchObject({ sent: 'ok' });
    // Abandoned, not acked: the lease is still the platform's until it expires.
    expect(consumerState(emulator, destination)).toMatchObject({ leased: ids.length, committed: null });

    emulator.faults.clear();
    await restartRunsNothingTwice(args, effects, ids, destination);
  }, 90_000);
});
