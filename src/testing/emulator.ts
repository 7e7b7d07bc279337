import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import pino, { type Logger } from 'pino';
import { createClient, type PlatformClient } from '../client/index.js';
import { resolveWorkerConfig } from '../config/load.js';
import type { RunOptionsInput } from '../config/options.js';
import type { DeadLetterRecord, DeadLetterSink } from '../dead-letter/sink.js';
import { DEV_DEFAULTS, startEmulator, type EmulatorOptions, type NewEvent, type RunningEmulator } from '../emulator/index.js';
import type { RunOutcome } from '../observability/worker-events.js';
import type { RunningWorker } from '../worker/running-worker.js';
import { startWorker } from '../worker/start.js';
import type { CloudEvent, TypedIngestEntry, TypedIngestResponse } from '../types.js';

/** Worker options a test may set; the connection is always the test emulator's. */
export type TestWorkerOptions = Omit<
  RunOptionsInput,
  'baseUrl' | 'authUrl' | 'tenant' | 'clientId' | 'clientSecret' | 'clientSecretFile' | 'apiKey' | 'destination' | 'handlers' | 'config'
>;

export interface WithEmulatorOptions {
  /** Handlers folder (relative to the process's cwd). Required unless `worker.forwardUrl` is set. */
  handlers?: string;
  /** Worker options. Defaults for tests: isolation none, memory idempotency store, metrics on a random loopback port, silent logs. */
  worker?: TestWorkerOptions;
  /** Emulator options. Default: a random port on 127.0.0.1, the development defaults. */
  emulator?: EmulatorOptions;
  /** Logger of the worker. Default: silent. */
  logger?: Logger;
  /** Default wait of `waitFor*` in ms. Default 10_000. */
  timeoutMs?: number;
}

/** One event reaching an outcome for one handler. */
export interface ObservedOutcome {
  event: CloudEvent;
  handler: string | undefined;
  outcome: RunOutcome;
  error?: { message: string; code?: string };
}

export interface TestEnvironment {
  /** Base URL of the emulator (API and issuer). */
  url: string;
  emulator: RunningEmulator;
  worker: RunningWorker;
  /** A platform client with the emulator's development credentials. */
  client: PlatformClient;
  tenant: string;
  destination: string;
  /** Every outcome so far, in order (a retried event appears once per failed attempt). */
  readonly outcomes: readonly ObservedOutcome[];
  /** Dead-letter records the worker wrote (kept in memory, not in a file). */
  readonly deadLetters: readonly DeadLetterRecord[];
  /** Typed ingest: one `source_entry.updated` event per entry once applied. */
  ingest(sourceId: string, entries: TypedIngestEntry[]): Promise<TypedIngestResponse>;
  /** Appends events of any type to the tenant's stream directly (for types the API cannot produce). */
  append(events: readonly NewEvent[]): CloudEvent[];
  /** Resolves with the outcomes once `predicate` holds; rejects after the timeout listing what was seen. */
  waitFor(predicate: (outcomes: readonly ObservedOutcome[]) => boolean, options?: { timeoutMs?: number }): Promise<readonly ObservedOutcome[]>;
  /** Waits until `count` final outcomes (ok, duplicate, dead_lettered) were seen; resolves with them. */
  waitForSettled(count: number, options?: { timeoutMs?: number }): Promise<ObservedOutcome[]>;
  /** Stops the worker (drain), the client and the emulator. Idempotent. */
  close(): Promise<void>;
}

const FINAL: ReadonlySet<RunOutcome> = new Set(['ok', 'duplicate', 'dead_lettered']);

/** Short loop waits: a caught-up worker notices new events within ~50 ms. */
const TEST_TIMINGS = { idleMinMs: 10, idleMaxMs: 50, pausedMs: 100, errorBaseMs: 20, errorMaxMs: 500, configRetryMs: 500 };

function describeOutcomes(outcomes: readonly ObservedOutcome[]): string {
  if (outcomes.length === 0) return 'no outcome yet';
  const last = outcomes
    .slice(-10)
    .map((o) => `${o.event.type} ${o.event.subject} -> ${o.handler ?? '-'}: ${o.outcome}${o.error ? ` (${o.error.message})` : ''}`);
  return `${outcomes.length} outcome(s), last: ${last.join('; ')}`;
}

/**
 * Starts an emulator and a worker against it in this process, for integration tests of handlers:
 * real HTTP, real leases and acks, the real dispatcher. With a callback, runs it and closes
 * everything afterwards; without, returns the environment (call `close()`, e.g. in `afterAll`).
 *
 * ```ts
 * await withEmulator({ handlers: './handlers' }, async (env) => {
 *   await env.ingest('products', [{ id: 'p-1', properties: [{ id: 'name', value: 'Kettle' }] }]);
 *   const [done] = await env.waitForSettled(1);
 *   expect(done?.outcome).toBe('ok');
 * });
 * ```
 */
export async function withEmulator(options: WithEmulatorOptions): Promise<TestEnvironment>;
export async function withEmulator<R>(options: WithEmulatorOptions, run: (env: TestEnvironment) => Promise<R>): Promise<R>;
export async function withEmulator<R>(options: WithEmulatorOptions, run?: (env: TestEnvironment) => Promise<R>): Promise<TestEnvironment | R> {
  const env = await startTestEnvironment(options);
  if (run === undefined) return env;
  try {
    return await run(env);
  } finally {
    await env.close();
  }
}

/** Resolves once /readyz would answer 200 (token obtained, handlers loaded), so tests start from a working worker. */
function untilReady(worker: RunningWorker, timeoutMs: number): Promise<void> {
  if (worker.ready) return Promise.resolve();
  return new Promise((resolvePromise, reject) => {
    const onChange = () => {
      if (!worker.ready) return;
      clearTimeout(timer);
      worker.events.off('ready:changed', onChange);
      resolvePromise();
    };
    const timer = setTimeout(() => {
      worker.events.off('ready:changed', onChange);
      reject(new Error(`withEmulator: the worker was not ready within ${timeoutMs} ms`));
    }, timeoutMs);
    worker.events.on('ready:changed', onChange);
  });
}

async function startTestEnvironment(options: WithEmulatorOptions): Promise<TestEnvironment> {
  const { tenant, clientId, clientSecret, consumer: destination } = DEV_DEFAULTS;
  if (options.handlers === undefined && options.worker?.forwardUrl === undefined)
    throw new TypeError('withEmulator: give `handlers` (a folder) or `worker.forwardUrl`');
  const logger = options.logger ?? pino({ level: 'silent' });
  const defaultTimeoutMs = options.timeoutMs ?? 10_000;
  const emulator = await startEmulator({ port: 0, logger, ...options.emulator });
  const closers: Array<{ name: string; run: () => Promise<void> }> = [{ name: 'emulator', run: () => emulator.close() }];
  const closeAll = async () => {
    const errors: unknown[] = [];
    for (const closer of closers.splice(0).reverse()) {
      try {
        await closer.run();
      } catch (err) {
        errors.push(err);
      }
    }
    if (errors.length > 0) throw new AggregateError(errors, 'withEmulator: closing the test environment failed');
  };

  try {
    const client = createClient({ baseUrl: emulator.url, tenant, clientId, clientSecret });
    closers.push({ name: 'client', run: () => client.close() });

    const deadLetters: DeadLetterRecord[] = [];
    const sink: DeadLetterSink = {
      async write(record) {
        deadLetters.push(record);
      },
      async close() {},
    };
    const handlers = options.handlers === undefined ? undefined : isAbsolute(options.handlers) ? options.handlers : resolve(process.cwd(), options.handlers);
    const config = resolveWorkerConfig({
      isolation: 'none',
      idempotency: 'memory',
      metricsPort: 0,
      metricsHost: '127.0.0.1',
      logLevel: 'silent',
      ...options.worker,
      baseUrl: emulator.url,
      tenant,
      clientId,
      clientSecret,
      destination,
      // Without a folder only the forwarding handler runs: point at a folder that cannot exist, so the
      // default ./handlers of the current folder is not picked up by accident.
      handlers: handlers ?? join(tmpdir(), `durable-worker-no-handlers-${randomUUID()}`),
    });

    const worker = await startWorker(config, { logger, deadLetter: sink, timings: TEST_TIMINGS, summaryIntervalMs: 3_600_000 });
    closers.push({ name: 'worker', run: () => worker.close() });

    await untilReady(worker, defaultTimeoutMs);

    const outcomes: ObservedOutcome[] = [];
    const listeners = new Set<() => void>();
    worker.events.on('run:done', (done) => {
      outcomes.push({ event: done.event, handler: done.handler, outcome: done.outcome, ...(done.error === undefined ? {} : { error: done.error }) });
      for (const listener of listeners) listener();
    });

    const waitFor: TestEnvironment['waitFor'] = (predicate, waitOptions = {}) => {
      const timeoutMs = waitOptions.timeoutMs ?? defaultTimeoutMs;
      if (predicate(outcomes)) return Promise.resolve(outcomes);
      return new Promise((resolvePromise, reject) => {
        const check = () => {
          if (!predicate(outcomes)) return;
          listeners.delete(check);
          clearTimeout(timer);
          resolvePromise(outcomes);
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`withEmulator: condition not met within ${timeoutMs} ms (${describeOutcomes(outcomes)})`));
        }, timeoutMs);
        listeners.add(check);
      });
    };

    return {
      url: emulator.url,
      emulator,
      worker,
      client,
      tenant,
      destination,
      outcomes,
      deadLetters,
      ingest: (sourceId, entries) => client.ingest(sourceId, { entries }),
      append: (events) => emulator.appendEvents(tenant, events),
      waitFor,
      async waitForSettled(count, waitOptions) {
        const settled = () => outcomes.filter((o) => FINAL.has(o.outcome));
        await waitFor(() => settled().length >= count, waitOptions);
        return settled();
      },
      close: closeAll,
    };
  } catch (err) {
    await closeAll().catch(() => {});
    throw err;
  }
}
