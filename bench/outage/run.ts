import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Dependency, type DependencyCall } from './dependency.js';
import { PlatformProcess, REPO_ROOT, WorkerProcess, type WorkerCounters } from './processes.js';

/** What one second of a run looked like: the worker's counters and the stream's position. */
export interface Sample extends WorkerCounters {
  /** Milliseconds since production started. */
  atMs: number;
  appended: number;
  head: number;
  committed: number;
}

/** A dead-letter record as the file sink writes it (the fields the benchmark reads). */
export interface DeadLetter {
  reason: string;
  attempt?: number;
  firstFailedAt?: string;
  lastFailedAt?: string;
  event: { id: string; subject?: string };
  deadLetteredAt?: string;
}

export interface RunRecord {
  startedAtMs: number;
  calls: DependencyCall[];
  samples: Sample[];
  deadLetters: DeadLetter[];
  appended: number;
  head: number;
  committed: number;
  final: WorkerCounters;
  workerExit: number | null;
  /** Seconds from the end of production until committed reached the head (undefined: it never did). */
  drainSeconds: number | undefined;
}

export interface RunSetup {
  /** `run` flags the scenario adds to the defaults (e.g. --no-breaker). */
  workerArgs: readonly string[];
  latencyMs: number;
  delayMs: number;
  poisonSubject?: string;
  drainTimeoutSeconds: number;
  keepDir?: boolean;
  /** The handlers folder (default bench/outage/handlers). */
  handlersDir?: string;
  /** `--idempotency` (default: a SQLite file in the run's folder). */
  idempotencyUrl?: string;
  /** While down, only this handler's calls fail. */
  downFor?: string;
  /**
   * Once the cursor is at the head, also wait (within the drain timeout) until this says the work is
   * done: runs deferred to the store go on after their leases were acked.
   */
  settled?: (calls: RunRecord['calls'], deadLetters: () => DeadLetter[]) => boolean;
}

function readDeadLetters(dir: string): DeadLetter[] {
  const file = join(dir, 'dead-letter.jsonl');
  return existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as DeadLetter)
    : [];
}

/** What a scenario does while the run goes on: produce, take the dependency down and up. */
export type Drive = (ctx: { platform: PlatformProcess; dependency: Dependency; startedAtMs: number; records: () => RunRecord['calls'] }) => Promise<void>;

/**
 * One run: the emulator in its own process, the dependency in this one, `durable-worker run` as a
 * fresh process with default settings but a temporary SQLite store and dead-letter file (and the
 * scenario's flags); `drive` produces and breaks things; then the run drains until committed
 * reaches the head (and `settled` holds), the worker is stopped with SIGTERM, and the records are read.
 */
export async function runOnce(setup: RunSetup, drive: Drive): Promise<RunRecord> {
  const dir = mkdtempSync(join(tmpdir(), 'dw-outage-'));
  const dependency = new Dependency({ delayMs: setup.delayMs, ...(setup.poisonSubject === undefined ? {} : { poisonSubject: setup.poisonSubject }) });
  await dependency.start();
  dependency.downFor = setup.downFor;
  const platform = await PlatformProcess.start();
  let worker: WorkerProcess | undefined;
  try {
    if (setup.latencyMs > 0) await platform.setLatency(setup.latencyMs);
    const args = [
      '--base-url',
      platform.url,
      '--tenant',
      'dev-tenant',
      '--client-id',
      'dev-client',
      '--destination',
      'dev-consumer',
      '--handlers',
      setup.handlersDir ?? join(REPO_ROOT, 'bench/outage/handlers'),
      '--idempotency',
      setup.idempotencyUrl ?? `sqlite:${join(dir, 'idempotency.sqlite')}`,
      '--dead-letter',
      `file:${join(dir, 'dead-letter.jsonl')}`,
      '--metrics-port',
      '0',
      '--metrics-host',
      '127.0.0.1',
      ...setup.workerArgs,
    ];
    worker = await WorkerProcess.start(args, { DURABLE_WORKER_CLIENT_SECRET: 'dev-secret', BENCH_DEPENDENCY_URL: dependency.url }, join(dir, 'worker.log'));
    const started = worker;
    const startedAtMs = Date.now();
    const samples: Sample[] = [];
    let sampling = true;
    const sampler = (async () => {
      for (let next = startedAtMs; sampling;) {
        const [counters, consumer] = await Promise.all([started.counters(), platform.consumer()]);
        samples.push({ atMs: Date.now() - startedAtMs, appended: platform.appended, ...counters, ...consumer });
        next += 1_000;
        await sleep(Math.max(0, next - Date.now()));
      }
    })();
    await drive({ platform, dependency, startedAtMs, records: () => dependency.calls });
    const producedAtMs = Date.now();
    let drainSeconds: number | undefined;
    for (const deadline = producedAtMs + setup.drainTimeoutSeconds * 1_000; Date.now() < deadline; await sleep(100)) {
      const c = await platform.consumer();
      if (c.head === platform.appended && c.committed === c.head && c.leased === 0 && (setup.settled?.(dependency.calls, () => readDeadLetters(dir)) ?? true)) {
        drainSeconds = (Date.now() - producedAtMs) / 1_000;
        break;
      }
    }
    sampling = false;
    await sampler;
    const final = await worker.counters();
    const consumer = await platform.consumer();
    const workerExit = await worker.stop();
    const deadLetters = readDeadLetters(dir);
    return {
      startedAtMs,
      calls: dependency.calls,
      samples,
      deadLetters,
      appended: platform.appended,
      head: consumer.head,
      committed: consumer.committed,
      final,
      workerExit,
      drainSeconds,
    };
  } finally {
    await worker?.stop(5_000).catch(() => null);
    await platform.stop();
    await dependency.close();
    if (setup.keepDir === true) process.stderr.write(`run folder kept: ${dir}\n`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

/** Successful calls (effects) per second of [fromMs, toMs) after the run's start, optionally filtered. */
export function effectsPerSecond(r: RunRecord, fromMs: number, toMs: number, keep: (c: DependencyCall) => boolean = () => true): number {
  if (toMs <= fromMs) return 0;
  let n = 0;
  for (const c of r.calls) {
    const at = c.atMs - r.startedAtMs;
    if (c.ok && at >= fromMs && at < toMs && keep(c)) n++;
  }
  return n / ((toMs - fromMs) / 1_000);
}

/** Effects, distinct events that took effect, and failed runs over the whole run. */
export function tally(r: RunRecord): { effects: number; distinct: number; failedRuns: number } {
  const ok = r.calls.filter((c) => c.ok);
  return { effects: ok.length, distinct: new Set(ok.map((c) => c.eventId)).size, failedRuns: r.calls.length - ok.length };
}

/** The sample closest to `atMs` after the run's start. */
export function sampleAt(r: RunRecord, atMs: number): Sample {
  let best = r.samples[0]!;
  for (const s of r.samples) if (Math.abs(s.atMs - atMs) < Math.abs(best.atMs - atMs)) best = s;
  return best;
}

/** Produces `count` events over `seconds` in ticks of 100 ms; `subject(i)` names the i-th event's subject. */
export async function produceSteadily(
  platform: PlatformProcess,
  startedAtMs: number,
  count: number,
  seconds: number,
  subject: (i: number) => string,
): Promise<void> {
  const ticks = Math.max(1, Math.round(seconds * 10));
  let produced = 0;
  for (let tick = 1; tick <= ticks; tick++) {
    const until = Math.round((count * tick) / ticks);
    const subjects: string[] = [];
    for (; produced < until; produced++) subjects.push(subject(produced));
    await platform.append(subjects);
    await sleep(Math.max(0, startedAtMs + tick * 100 - Date.now()));
  }
}

/** Takes the dependency down from `downMs` to `upMs` after `startedAtMs` (a scheduled outage, not a synchronisation). */
export async function outageBetween(dependency: Dependency, startedAtMs: number, downMs: number, upMs: number): Promise<void> {
  await sleep(Math.max(0, startedAtMs + downMs - Date.now()));
  dependency.down = true;
  await sleep(Math.max(0, startedAtMs + upMs - Date.now()));
  dependency.down = false;
}
