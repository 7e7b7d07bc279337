import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { createClient } from '../../src/client/index.js';
import { mulberry32 } from '../../src/emulator/faults/injector.js';
import { startEmulator, type ConsumerStateSummary, type FaultOptions, type RunningEmulator } from '../../src/emulator/index.js';
import { deferredRunsOf } from '../../src/idempotency/deferred.js';
import { createIdempotencyStore } from '../../src/idempotency/index.js';
import { redactUrl } from '../../src/runtime/redact-url.js';
import { checkRun, type ChaosVerdict } from './check.js';
import { planEvents, type EventKind } from './plan.js';
import { REPO_ROOT, WorkerSlot, type ProcessRecord } from './workers.js';

export interface ChaosOptions {
  /** Replays the events, faults, kill times and pause of a run (process scheduling stays the OS's). */
  seed: number;
  events: number;
  /** Events are appended over this many seconds, in ticks of 100 ms, while the chaos goes on. */
  produceSeconds: number;
  /** SIGKILL of a random process every killMinMs..killMaxMs; at least minKills before the chaos stops. */
  killMinMs: number;
  killMaxMs: number;
  minKills: number;
  processes: number;
  workersPerProcess: number;
  visibilitySeconds: number;
  limit: number;
  concurrency: number;
  maxAttempts: number;
  /** Shared idempotency store URL. Default: REDIS_URL, else DATABASE_URL, else one SQLite file (WAL). */
  store?: string;
  isolation: 'thread' | 'none';
  from: 'source' | 'dist';
  /** Deadline for the workers to reach the head once the chaos stops. */
  drainTimeoutSeconds: number;
  /** Keep the run folder (effects, dead letters, worker logs) for inspection. */
  keepDir: boolean;
}

export const DEFAULT_CHAOS: ChaosOptions = {
  seed: 1,
  events: 2_000,
  produceSeconds: 8,
  killMinMs: 1_500,
  killMaxMs: 4_000,
  minKills: 2,
  processes: 2,
  workersPerProcess: 2,
  visibilitySeconds: 4,
  limit: 20,
  concurrency: 8,
  maxAttempts: 4,
  isolation: 'thread',
  from: 'source',
  drainTimeoutSeconds: 120,
  keepDir: false,
};

export interface ChaosReport {
  options: ChaosOptions;
  store: string;
  dir: string;
  counts: Record<EventKind, number>;
  kills: ProcessRecord[];
  starts: number;
  spikes: number;
  pause: { atMs: number; forMs: number } | undefined;
  durationMs: number;
  drainMs: number;
  /** Warnings and errors the emulator logged, by message. */
  emulatorLog: Record<string, number>;
  verdict: ChaosVerdict;
}

const TENANT = 'chaos-tenant';
const DESTINATION = 'chaos';
const CLIENT_ID = 'chaos-client';

/** The base faults of the issue: 5 % 5xx on pull and ack, dropped connections, 429 bursts on pull. */
function baseFaults(seed: number): FaultOptions {
  return {
    seed,
    routes: ['pull', 'ack'],
    errorRate: 0.05,
    dropRate: 0.01,
    throttle: { rate: 0.01, burst: 3, retryAfterSeconds: 1, routes: ['pull'] },
  };
}

/** Where the two processes share done marks: a network store when there is one. */
export function chooseStore(explicit: string | undefined, dir: string): string {
  if (explicit !== undefined) return explicit;
  if (process.env.REDIS_URL) return process.env.REDIS_URL;
  if (process.env.DATABASE_URL) return process.env.DATABASE_URL;
  // SQLite in WAL mode is shared by processes of one machine through file locks.
  return `sqlite:${join(dir, 'idempotency.sqlite')}`;
}

function countMessages(file: string): Record<string, number> {
  const counts: Record<string, number> = {};
  if (!existsSync(file)) return counts;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line === '') continue;
    const { msg, err } = JSON.parse(line) as { msg?: string; err?: { code?: string } };
    const key = `${msg ?? '?'}${err?.code ? ` (${err.code})` : ''}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

function consumerOf(emulator: RunningEmulator): ConsumerStateSummary {
  const consumer = emulator
    .state()
    .tenants.find((t) => t.id === TENANT)
    ?.consumers.find((c) => c.id === DESTINATION);
  if (consumer === undefined) throw new Error('chaos consumer missing');
  return consumer;
}

/** Runs deferred to the store (a failed run's retry) go on after the cursor reached the head: waits for them too. */
async function untilNoDeferredRuns(store: string, prefix: string, deadline: number): Promise<void> {
  const probe = await createIdempotencyStore(store, { prefix, doneTtlMs: 600_000 });
  try {
    const deferred = deferredRunsOf(probe);
    while (deferred !== undefined && (await deferred.nextDueAtMs()) !== undefined && Date.now() < deadline) await sleep(100);
  } finally {
    await probe.close();
  }
}

function caughtUp(c: ConsumerStateSummary): boolean {
  return c.head !== null && c.committed === c.head && c.leased === 0 && c.pendingRedelivery === 0;
}

/**
 * One chaos run: an in-process emulator with fault injection, `processes` `durable-worker run`
 * children sharing one idempotency store, SIGKILL + restart of a random child every few seconds,
 * latency spikes, a pause/resume in the middle; then the records are checked (check.ts).
 */
export async function runChaos(options: Partial<ChaosOptions> = {}, progress: (line: string) => void = () => {}): Promise<ChaosReport> {
  const o: ChaosOptions = { ...DEFAULT_CHAOS, ...options };
  const random = mulberry32(o.seed);
  const between = (min: number, max: number) => min + random() * (max - min);
  const dir = mkdtempSync(join(tmpdir(), `dw-chaos-${o.seed}-`));
  mkdirSync(join(dir, 'logs'));
  const store = chooseStore(o.store, dir);
  const prefix = `chaos-${o.seed}-${randomBytes(4).toString('hex')}`;
  const emulatorLog = join(dir, 'logs', 'emulator.log');
  // A fresh secret per run: it never appears in argv of a log line (the children get it by env).
  const clientSecret = randomBytes(18).toString('base64url');
  const emulator = await startEmulator({
    port: 0,
    // Its own log file: client aborts mid-request (acks timed out by a latency spike) log there.
    logger: pino({ level: 'warn' }, pino.destination({ dest: emulatorLog, sync: true })),
    // No default consumer: the only consumer commits, so the emulator trims what it committed.
    config: {
      defaults: false,
      tenants: [{ id: TENANT, destinations: [{ id: DESTINATION, type: 'DURABLE_CONSUMER' }] }],
      applications: [{ tenant: TENANT, clientId: CLIENT_ID, clientSecret }],
    },
  });
  const slots: WorkerSlot[] = [];
  const started = Date.now();
  let spikes = 0;
  let pause: ChaosReport['pause'];
  // A failed or broken run keeps its folder (effects, dead letters, worker logs) for the replay.
  let keep = o.keepDir;
  try {
    const args = [
      '--base-url',
      emulator.url,
      '--tenant',
      TENANT,
      '--client-id',
      CLIENT_ID,
      '--destination',
      DESTINATION,
      '--handlers',
      join(REPO_ROOT, 'test/fixtures/chaos-handlers'),
      '--workers',
      String(o.workersPerProcess),
      '--limit',
      String(o.limit),
      '--visibility',
      String(o.visibilitySeconds),
      '--concurrency',
      String(o.concurrency),
      '--max-attempts',
      String(o.maxAttempts),
      '--idempotency',
      store,
      '--idempotency-prefix',
      prefix,
      '--metrics-port',
      '0',
      '--metrics-host',
      '127.0.0.1',
      '--isolation',
      o.isolation,
      '--shutdown-timeout',
      String(Math.max(1, o.visibilitySeconds - 2)),
      // info: the `worker started` line tells the runner a restarted process is up (waitUntilStarted).
      '--log-level',
      'info',
    ];
    for (let slot = 0; slot < o.processes; slot++) {
      const slotArgs = [...args, '--dead-letter', `file:${join(dir, `dead-letter-${slot}.jsonl`)}`];
      slots.push(
        new WorkerSlot({
          slot,
          args: slotArgs,
          env: { CHAOS_EFFECTS_DIR: dir, DURABLE_WORKER_CLIENT_SECRET: clientSecret },
          logDir: join(dir, 'logs'),
          from: o.from,
        }),
      );
    }
    for (const slot of slots) slot.start();
    emulator.faults.set(baseFaults(o.seed));

    const plan = planEvents({ seed: o.seed, events: o.events, poisonRate: 0.002, flakyRate: 0.05, subjects: Math.max(10, Math.floor(o.events / 20)) });
    const kinds = new Map<string, EventKind>();
    const counts: Record<EventKind, number> = { work: 0, flaky: 0, poison: 0 };

    // Producer: the plan appended in 100 ms ticks over produceSeconds.
    let produced = 0;
    const producing = (async () => {
      const ticks = Math.max(1, Math.round(o.produceSeconds * 10));
      for (let tick = 1; tick <= ticks; tick++) {
        const until = Math.round((o.events * tick) / ticks);
        const chunk = plan.slice(produced, until);
        const appended = emulator.appendEvents(
          TENANT,
          chunk.map((p) => p.event),
        );
        appended.forEach((event, i) => {
          const kind = (chunk[i] as (typeof chunk)[number]).kind;
          kinds.set(event.id, kind);
          counts[kind]++;
        });
        produced = until;
        await sleep(100);
      }
    })();

    let chaosOver = false;
    // Latency spikes on pull and ack: a few hundred ms to 1.5 s, for under a second at a time.
    const spiking = (async () => {
      while (!chaosOver) {
        await sleep(between(1_500, 5_000));
        if (chaosOver) break;
        emulator.faults.set({ ...baseFaults(o.seed + spikes + 1), latencyMs: between(200, 800), latencyJitterMs: 700 });
        spikes++;
        await sleep(between(300, 900));
        emulator.faults.set(baseFaults(o.seed + spikes + 1000));
      }
    })();

    // Pause/resume in the middle of production (POST .../pause and .../resume, src/client/consumers.ts).
    const pausing = (async () => {
      await sleep(o.produceSeconds * 500);
      const client = createClient({ baseUrl: emulator.url, tenant: TENANT, clientId: CLIENT_ID, clientSecret });
      try {
        const forMs = Math.round(between(1_000, 2_500));
        pause = { atMs: Date.now() - started, forMs };
        await client.pause(DESTINATION);
        progress(`pause at ${((Date.now() - started) / 1000).toFixed(1)} s for ${forMs} ms`);
        await sleep(forMs);
        await client.resume(DESTINATION);
      } finally {
        await client.close();
      }
    })();

    // Kills: a random process every killMinMs..killMaxMs until production is over and minKills done.
    const kills: ProcessRecord[] = [];
    let producedAll = false;
    void producing.then(() => (producedAll = true));
    while (!(producedAll && kills.length >= o.minKills)) {
      await sleep(between(o.killMinMs, o.killMaxMs));
      const slot = slots[Math.floor(random() * slots.length)] as WorkerSlot;
      const killed = await slot.kill();
      if (killed !== undefined) {
        kills.push(killed);
        progress(
          `SIGKILL slot ${killed.slot} pid ${killed.pid} at ${((Date.now() - started) / 1000).toFixed(1)} s (produced ${produced}/${o.events}, committed ${consumerOf(emulator).committed})`,
        );
      }
      await sleep(between(0, 800));
      slot.start();
    }
    chaosOver = true;
    await Promise.all([producing, spiking, pausing]);
    for (const slot of slots) if (!slot.running) slot.start();

    // Drain: the base faults stay on; the workers must still reach the head.
    const drainStarted = Date.now();
    const deadline = drainStarted + o.drainTimeoutSeconds * 1_000;
    while (!caughtUp(consumerOf(emulator)) && Date.now() < deadline) await sleep(100);
    await untilNoDeferredRuns(store, prefix, deadline);
    const drainMs = Date.now() - drainStarted;
    const drained: boolean[] = [];
    await Promise.all(slots.map((slot) => slot.waitUntilStarted(30_000)));
    for (const slot of slots) drained.push(await slot.stop((o.visibilitySeconds + 15) * 1_000));

    const processes = slots.flatMap((s) => s.processes);
    const verdict = checkRun({ dir, kinds, processes, consumer: consumerOf(emulator), inFlightWindowMs: (o.visibilitySeconds + 2) * 1_000, drained });
    if (verdict.failures.length > 0) keep = true;
    return {
      options: o,
      store: redactUrl(store),
      dir,
      counts,
      kills,
      starts: processes.length,
      spikes,
      pause,
      durationMs: Date.now() - started,
      drainMs,
      emulatorLog: countMessages(emulatorLog),
      verdict,
    };
  } catch (err) {
    keep = true;
    throw err;
  } finally {
    for (const slot of slots) await slot.stop(5_000).catch(() => false);
    await emulator.close();
    if (!keep) rmSync(dir, { recursive: true, force: true });
  }
}
