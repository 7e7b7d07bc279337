import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { WorkerConfig } from '../../src/config/types.js';
import { startWorker } from '../../src/worker/start.js';
import type { IsolationData, RunRecord } from '../fixtures/isolation-handlers/_record.js';
import { createConsumer, deadLetters, emulatorForFile, FAST, silent, tempDir, TENANT, untilCommitted, untilSettled, waitFor, workerConfig } from './harness.js';

/**
 * Failures stay where they happen (docs/handlers.md, "Order and isolation"): with a store that holds
 * deferred runs (here SQLite), a handler whose dependency is down, whose events ask to wait, or that
 * meets poison events, holds back only its own runs of the subjects concerned; the other handler's
 * events, of other types or of the very same events, run on time.
 */
const HANDLERS = fileURLToPath(new URL('../fixtures/isolation-handlers', import.meta.url));

function runsOf(file: string): RunRecord[] {
  if (!existsSync(file)) return [];
  // Complete lines only: a handler thread may be appending the last one while this reads.
  return readFileSync(file, 'utf8')
    .split('\n')
    .slice(0, -1)
    .filter(Boolean)
    .map((line) => JSON.parse(line) as RunRecord);
}

/** The ok runs of `handler`, by event id. */
function okRuns(file: string, handler: string): Map<string, RunRecord[]> {
  const out = new Map<string, RunRecord[]>();
  for (const run of runsOf(file)) if (run.handler === handler && run.ok) out.set(run.eventId, [...(out.get(run.eventId) ?? []), run]);
  return out;
}

describe.each(['none', 'thread'] as const)('failure isolation (isolation %s, SQLite store)', (isolation) => {
  const t = emulatorForFile();

  const config = (destination: string, dir: string, overrides: Partial<WorkerConfig> = {}): WorkerConfig =>
    workerConfig(t.emulator, destination, dir, {
      handlersDir: HANDLERS,
      isolation,
      idempotencyUrl: `sqlite:${join(dir, 'idempotency.sqlite')}`,
      visibilitySeconds: 20,
      retryBackoffMinMs: 200,
      retryBackoffMaxMs: 1_000,
      breaker: true,
      breakerCooldownMs: 500,
      maxAttempts: 5,
      ...overrides,
    });

  /** Appends `count` events over `spreadMs`, `perTick` at a time; returns them with their append times. */
  async function stream(
    count: number,
    spreadMs: number,
    event: (i: number) => { type: string; subject: string; data: IsolationData },
  ): Promise<{ id: string; type: string; atMs: number }[]> {
    const out: { id: string; type: string; atMs: number }[] = [];
    const ticks = Math.max(1, Math.round(spreadMs / 50));
    for (let tick = 0, i = 0; tick < ticks; tick++) {
      const batch = [];
      for (const until = Math.round((count * (tick + 1)) / ticks); i < until; i++) batch.push(event(i));
      const atMs = Date.now();
      for (const e of t.emulator.appendEvents(TENANT, batch)) out.push({ id: e.id, type: e.type, atMs });
      await sleep(50);
    }
    return out;
  }

  for (const shared of [false, true]) {
    it(`one handler's dependency down: the other's events ${shared ? '(the very same events) ' : ''}run during the outage; nothing dead-lettered, each effect once`, async () => {
      const dir = tempDir('iso-outage');
      const runsFile = join(dir, 'runs.jsonl');
      const downFile = join(dir, 'down');
      const destination = await createConsumer(t.emulator, 'iso');
      const worker = await startWorker(config(destination, dir), { logger: silent, timings: FAST, healthServer: false });
      t.running.push(worker);
      writeFileSync(downFile, '');
      const outageStart = Date.now();
      // 80 events over 2 s, on 8 subjects: with a shared type both handlers run each event.
      const appended = await stream(80, 2_000, (i) => ({
        type: shared ? 'iso.ab' : i % 2 === 0 ? 'iso.a' : 'iso.b',
        subject: `s-${i % 8}`,
        data: { runsFile, flaky: { downFile } },
      }));
      const healthyIds = appended.filter((e) => e.type !== 'iso.b').map((e) => e.id);
      // The healthy handler's events all ran while the dependency is still down.
      await waitFor('the healthy handler ran every event during the outage', () => healthyIds.every((id) => okRuns(runsFile, 'healthy').has(id)), 15_000);
      expect(existsSync(downFile), 'the outage still on').toBe(true);
      const outageMs = Date.now() - outageStart;
      rmSync(downFile);
      const flakyIds = appended.filter((e) => e.type !== 'iso.a').map((e) => e.id);
      await waitFor('the flaky handler ran every event after the return', () => flakyIds.every((id) => okRuns(runsFile, 'flaky').has(id)), 20_000);
      await untilCommitted(t.emulator, destination);
      expect(deadLetters(join(dir, 'dead-letter.jsonl'))).toEqual([]);
      for (const [handler, ids] of [
        ['healthy', healthyIds],
        ['flaky', flakyIds],
      ] as const) {
        const ok = okRuns(runsFile, handler);
        for (const id of ids) expect(ok.get(id)?.length, `${handler} ${id}`).toBe(1);
      }
      // No healthy run failed, and none waited for the outage's end.
      expect(runsOf(runsFile).filter((r) => r.handler === 'healthy' && !r.ok)).toEqual([]);
      expect(outageMs).toBeGreaterThan(0);
    });
  }

  it("an outage longer than the events' own retries dead-letters nothing: the breaker opens before their attempts run out, and its probes go round the chains", async () => {
    const dir = tempDir('iso-long-outage');
    const runsFile = join(dir, 'runs.jsonl');
    const downFile = join(dir, 'down');
    const destination = await createConsumer(t.emulator, 'iso');
    // Backoff 50 ms doubling to 400 ms: alone, each event would spend its 5 attempts in under 1 s. The
    // outage lasts 3 s; a probe every 100 ms is some 30 probes over 20 chains.
    const settings = config(destination, dir, { breakerWindow: 4, breakerCooldownMs: 100, maxAttempts: 5, retryBackoffMinMs: 50, retryBackoffMaxMs: 400 });
    const worker = await startWorker(settings, { logger: silent, timings: FAST, healthServer: false });
    t.running.push(worker);
    writeFileSync(downFile, '');
    const appended = await stream(20, 300, (i) => ({ type: 'iso.b', subject: `s-${i}`, data: { runsFile, flaky: { downFile } } }));
    await waitFor('probes failing for a while', () => runsOf(runsFile).filter((r) => !r.ok).length >= appended.length + 15, 15_000);
    rmSync(downFile);
    await waitFor('every event ran ok after the return', () => okRuns(runsFile, 'flaky').size === appended.length, 20_000);
    await untilSettled(t.emulator, destination, settings);
    expect(deadLetters(join(dir, 'dead-letter.jsonl'))).toEqual([]);
  });

  it('a few events ask to wait: the others run at once; each waiting one runs again after its wait, in its own chain only', async () => {
    const dir = tempDir('iso-later');
    const runsFile = join(dir, 'runs.jsonl');
    const destination = await createConsumer(t.emulator, 'iso');
    const worker = await startWorker(config(destination, dir, { retryBackoffMaxMs: 10_000 }), { logger: silent, timings: FAST, healthServer: false });
    t.running.push(worker);
    const WAIT_MS = 3_000;
    // 100 events on their own subjects; every tenth asks the flaky handler to wait 3 s.
    const appended = await stream(100, 1_000, (i) => ({
      type: 'iso.b',
      subject: `later-${i}`,
      data: { runsFile, flaky: i % 10 === 3 ? { retryLaterMs: WAIT_MS } : {} },
    }));
    const waiting = new Set(appended.filter((_, i) => i % 10 === 3).map((e) => e.id));
    await waitFor('every event ran ok', () => okRuns(runsFile, 'flaky').size === appended.length, 20_000);
    const runs = runsOf(runsFile);
    const firstRun = new Map<string, number>();
    for (const r of runs) if (!firstRun.has(r.eventId)) firstRun.set(r.eventId, r.startMs);
    const ok = okRuns(runsFile, 'flaky');
    // The others did not wait for the waiting ones: every one of them ran before any waiting one ran again.
    const lastOther = Math.max(...appended.filter((e) => !waiting.has(e.id)).map((e) => (ok.get(e.id) as RunRecord[])[0]!.startMs));
    const firstRetry = Math.min(...[...waiting].map((id) => (ok.get(id) as RunRecord[])[0]!.startMs));
    expect(lastOther).toBeLessThan(firstRetry);
    for (const id of waiting) {
      const again = (ok.get(id) as RunRecord[])[0]!.startMs - (firstRun.get(id) as number);
      expect(again, id).toBeGreaterThanOrEqual(WAIT_MS);
      expect((ok.get(id) as RunRecord[])[0]!.attempt, id).toBe(2);
    }
    await untilCommitted(t.emulator, destination);
    expect(deadLetters(join(dir, 'dead-letter.jsonl'))).toEqual([]);
  });

  it("order per (handler, subject): a deferred run holds back its handler's later runs of that subject, not the other handler's", async () => {
    const dir = tempDir('iso-order');
    const runsFile = join(dir, 'runs.jsonl');
    const destination = await createConsumer(t.emulator, 'iso');
    const worker = await startWorker(config(destination, dir), { logger: silent, timings: FAST, healthServer: false });
    t.running.push(worker);
    // One subject: its first event's flaky run asks to wait 1.5 s; four more follow.
    const appended = t.emulator.appendEvents(
      TENANT,
      Array.from({ length: 5 }, (_, i) => ({
        type: 'iso.ab',
        subject: 'ordered',
        data: { runsFile, flaky: i === 0 ? { retryLaterMs: 1_500 } : {} } satisfies IsolationData,
      })),
    );
    await waitFor('both handlers ran every event', () => okRuns(runsFile, 'flaky').size === 5 && okRuns(runsFile, 'healthy').size === 5, 15_000);
    const healthy = okRuns(runsFile, 'healthy');
    const flaky = okRuns(runsFile, 'flaky');
    const at = (runs: Map<string, RunRecord[]>, i: number) => (runs.get(appended[i]!.id) as RunRecord[])[0]!.startMs;
    // Each handler in stream order; the healthy one did not wait for the flaky one's wait.
    for (let i = 1; i < 5; i++) {
      expect(at(flaky, i)).toBeGreaterThanOrEqual(at(flaky, i - 1));
      expect(at(healthy, i)).toBeGreaterThanOrEqual(at(healthy, i - 1));
    }
    expect(at(healthy, 4)).toBeLessThan(at(flaky, 0));
    await untilCommitted(t.emulator, destination);
  });

  it('every 10th event fails once and 3 are poison: exactly the poison ones dead-lettered, the breaker never stops the rest', async () => {
    const dir = tempDir('iso-poison');
    const runsFile = join(dir, 'runs.jsonl');
    const destination = await createConsumer(t.emulator, 'iso');
    const worker = await startWorker(config(destination, dir, { maxAttempts: 3, retryBackoffMinMs: 100, retryBackoffMaxMs: 400, breakerWindow: 20 }), {
      logger: silent,
      timings: FAST,
      healthServer: false,
    });
    t.running.push(worker);
    const poison = new Set([17, 55, 91]);
    const appended = t.emulator.appendEvents(
      TENANT,
      Array.from({ length: 300 }, (_, i) => ({
        type: 'iso.b',
        subject: `p-${i}`,
        data: { runsFile, flaky: poison.has(i) ? { poison: true } : i % 10 === 0 ? { failFirst: 1 } : {} } satisfies IsolationData,
      })),
    );
    let breakerOpened = false;
    worker.events.on('breaker:state', (change) => (breakerOpened ||= change.state === 'open'));
    await waitFor(
      'every healthy event ran ok and the poison ones were dead-lettered',
      () => okRuns(runsFile, 'flaky').size === 297 && deadLetters(join(dir, 'dead-letter.jsonl')).length === 3,
      20_000,
    );
    expect(
      deadLetters(join(dir, 'dead-letter.jsonl'))
        .map((d) => d.event.id)
        .sort(),
    ).toEqual([...poison].map((i) => appended[i]!.id).sort());
    expect(breakerOpened).toBe(false);
    await untilCommitted(t.emulator, destination);
  });
});
