import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Writable } from 'node:stream';
import pino, { type Logger } from 'pino';
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { WorkerConfig } from '../../src/config/types.js';
import type { DeadLetterRecord } from '../../src/dead-letter/sink.js';
import { deferredRunsOf } from '../../src/idempotency/deferred.js';
import { createIdempotencyStore } from '../../src/idempotency/index.js';
import { startEmulator, type ConsumerStateSummary, type RunningEmulator } from '../../src/emulator/index.js';
import type { CloudEvent } from '../../src/types.js';
import type { RunningWorker } from '../../src/worker/running-worker.js';

export const BEHAVIOURS = fileURLToPath(new URL('../fixtures/handlers-behaviours', import.meta.url));
export const TENANT = 'dev-tenant';
export const silent = pino({ level: 'silent' });

/** A fresh durable consumer: it starts at the head, so it sees only the events appended after it. */
export async function createConsumer(emulator: RunningEmulator, prefix = 'worker-test'): Promise<string> {
  const id = `${prefix}-${randomUUID().slice(0, 8)}`;
  const response = await fetch(`${emulator.url}/_emulator/tenants/${TENANT}/event-destinations`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ id, type: 'DURABLE_CONSUMER' }),
  });
  if (response.status !== 201) throw new Error(`creating consumer ${id}: ${response.status} ${await response.text()}`);
  return id;
}

export function consumerState(emulator: RunningEmulator, id: string): ConsumerStateSummary {
  const tenant = emulator.state().tenants.find((t) => t.id === TENANT);
  const consumer = tenant?.consumers.find((c) => c.id === id);
  if (consumer === undefined) throw new Error(`no consumer ${id}`);
  return consumer;
}

export function tempDir(label: string): string {
  return mkdtempSync(join(tmpdir(), `dw-${label}-`));
}

/** A worker against the emulator at `emulator.url`: the dev credentials, the memory store, a file dead-letter sink in `dir`. */
export function workerConfig(emulator: Pick<RunningEmulator, 'url'>, destination: string, dir: string, overrides: Partial<WorkerConfig> = {}): WorkerConfig {
  const id = randomUUID().slice(0, 8);
  return {
    baseUrl: emulator.url,
    authUrl: emulator.url,
    destination,
    tenant: TENANT,
    clientId: 'dev-client',
    clientSecret: 'dev-secret',
    handlersDir: BEHAVIOURS,
    workers: 1,
    workerIdPrefix: `w-${id}`,
    limit: 20,
    visibilitySeconds: 10,
    concurrency: 8,
    maxAttempts: 3,
    idempotencyUrl: 'memory',
    idempotencyPrefix: `test-${id}`,
    idempotencyTtlMs: 600_000,
    deadLetterUrl: `file:${join(dir, 'dead-letter.jsonl')}`,
    metricsPort: 0,
    metricsHost: '127.0.0.1',
    exitWhenIdle: false,
    logLevel: 'silent',
    isolation: 'none',
    shutdownTimeoutSeconds: 5,
    forwardMode: 'binary',
    // Retries soon, and no breaker: these tests are about what a failure leads to, not when
    // (test/worker/failure-handling.test.ts covers the backoff and the breaker).
    retryBackoffMinMs: 10,
    retryBackoffMaxMs: 100,
    breaker: false,
    ...overrides,
  };
}

/** Fast loop waits so tests finish quickly. */
export const FAST = { idleMinMs: 20, idleMaxMs: 100, pausedMs: 100, errorBaseMs: 20, errorMaxMs: 200, configRetryMs: 200 };

export function appendBehave(
  emulator: RunningEmulator,
  count: number,
  data: (i: number) => Record<string, unknown>,
  subject: (i: number) => string = (i) => `s-${i}`,
  type = 'behave.test',
): CloudEvent[] {
  const events = Array.from({ length: count }, (_, i) => ({ type, subject: subject(i), data: data(i) }));
  const out: CloudEvent[] = [];
  // The emulator takes any batch size; chunks keep single calls small.
  for (let i = 0; i < events.length; i += 1_000) out.push(...emulator.appendEvents(TENANT, events.slice(i, i + 1_000)));
  return out;
}

/** Lines of a record file: `<handler> <event id> <subject> <sequence> <attempt>`. */
export function records(file: string): { handler: string; eventId: string; subject: string; sequence: string; attempt: number }[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [handler = '', eventId = '', subject = '', sequence = '', attempt = '0'] = line.split(' ');
      return { handler, eventId, subject, sequence, attempt: Number(attempt) };
    });
}

export function deadLetters(file: string): DeadLetterRecord[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as DeadLetterRecord);
}

import { waitFor as waitForState } from '../fixtures/wait-for.js';
export { waitFor } from '../fixtures/wait-for.js';

/** A logger that keeps what the worker logs (as a user's log pipeline would get it), one object a line. */
export function capturingLogger(level: pino.Level = 'info'): { logger: Logger; lines: () => Record<string, unknown>[]; messages: () => string[] } {
  const kept: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, callback) {
      for (const line of String(chunk).split('\n')) if (line !== '') kept.push(JSON.parse(line) as Record<string, unknown>);
      callback();
    },
  });
  return { logger: pino({ level }, stream), lines: () => kept, messages: () => kept.map((l) => String(l.msg)) };
}

/** Waits until the consumer committed everything appended so far and holds no lease. */
export async function untilCommitted(emulator: RunningEmulator, destination: string, timeoutMs = 20_000): Promise<ConsumerStateSummary> {
  return waitForState(
    `consumer ${destination} committed to its head`,
    () => (committedNow(emulator, destination) ? consumerState(emulator, destination) : undefined),
    timeoutMs,
  );
}

/**
 * Waits until every run of the worker of `config` ended: the consumer committed to its head and holds
 * no lease (a run that had to wait was deferred to the store before its lease was acked) and the store
 * holds no deferred run of the prefix (a deferred run is removed only after its end was reported). With
 * the memory store, whose waits stay in their lease, that is `untilCommitted`.
 */
export async function untilSettled(
  emulator: RunningEmulator,
  destination: string,
  config: Pick<WorkerConfig, 'idempotencyUrl' | 'idempotencyPrefix'>,
  timeoutMs = 20_000,
): Promise<void> {
  await untilCommitted(emulator, destination, timeoutMs);
  const store = await createIdempotencyStore(config.idempotencyUrl, { prefix: config.idempotencyPrefix, doneTtlMs: 600_000 });
  try {
    const deferred = deferredRunsOf(store);
    if (deferred === undefined) return;
    await waitForState(
      `no deferred run under ${config.idempotencyPrefix}`,
      async () => (await deferred.nextDueAtMs()) === undefined && committedNow(emulator, destination),
      timeoutMs,
      50,
    );
  } finally {
    await store.close();
  }
}

function committedNow(emulator: RunningEmulator, destination: string): boolean {
  const state = consumerState(emulator, destination);
  return state.committed === state.head && state.leased === 0 && state.pendingRedelivery === 0;
}

/**
 * Resolves once `worker` reported `times` caught-up pulls (a 204) after this call. The worker reports
 * one only when it holds no lease and the pull was sent after the last ack was answered, so by then
 * every ack it sent was answered: what the worker reports about them (events, metrics, logs) is
 * complete, not racing the emulator's state.
 */
export function untilCaughtUp(worker: RunningWorker, times = 1, timeoutMs = 20_000): Promise<void> {
  let seen = 0;
  worker.events.on('caught-up', () => void seen++);
  return waitForState(`${times} caught-up report(s)`, () => seen >= times, timeoutMs).then(() => undefined);
}

/**
 * The emulator of a test file (started before its tests, closed after them) and the workers its tests
 * start: pushed on `running`, closed after each test, with the emulator's faults cleared.
 */
export function emulatorForFile(): { readonly emulator: RunningEmulator; readonly running: RunningWorker[] } {
  let emulator: RunningEmulator | undefined;
  const running: RunningWorker[] = [];
  beforeAll(async () => {
    emulator = await startEmulator({ port: 0 });
  });
  afterEach(async () => {
    emulator?.faults.clear();
    await Promise.all(running.splice(0).map((w) => w.close()));
  });
  afterAll(async () => {
    await emulator?.close();
  });
  return {
    get emulator() {
      if (emulator === undefined) throw new Error('the emulator starts in beforeAll');
      return emulator;
    },
    running,
  };
}
