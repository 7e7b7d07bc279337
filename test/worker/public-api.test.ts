import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  createClient,
  startEmulator,
  startWorker,
  type ClaimState,
  type Clock,
  type ConsumerApi,
  type DeadLetterSink,
  type IdempotencyStore,
  type StartWorkerOptions,
  type WorkerEventMap,
} from '../../src/index.js';
import { appendBehave, createConsumer, silent } from './harness.js';

/**
 * The package entry exports every type its signatures use (issue 21): a caller brings its own store,
 * sink, client and clock through StartWorkerOptions, listens through WorkerEventMap, and tells a
 * configuration error apart with `instanceof ConfigError`, all from `durable-worker` alone.
 */
describe('public API', () => {
  it('startWorker rejects bad options with an exported ConfigError naming the option', async () => {
    const err = await startWorker({ baseUrl: 'http://127.0.0.1:1', tenant: 't', clientId: 'c', clientSecret: 's', destination: 'd', limit: 0 }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).message).toMatch(/limit/);
  });

  it("a caller's own store, sink, client and clock, typed from the entry, run a worker", async () => {
    const emulator = await startEmulator({ port: 0 });
    const platform = createClient({ baseUrl: emulator.url, tenant: 'dev-tenant', clientId: 'dev-client', clientSecret: 'dev-secret' });
    try {
      const destination = await createConsumer(emulator);
      appendBehave(emulator, 5, () => ({}));
      const done = new Set<string>();
      const store: IdempotencyStore = {
        claim: async (keys) => ({ states: keys.map((key): ClaimState => (done.has(key) ? 'done' : 'new')), failures: undefined }),
        markDone: async (keys) => void keys.forEach((key) => done.add(key)),
        release: async () => {},
        recordFailures: async (entries) => entries.map(() => 1),
        close: async () => {},
      };
      const deadLetter: DeadLetterSink = { write: async () => {}, close: async () => {} };
      const clock: Clock = {
        now: () => Date.now(),
        setTimeout: (callback, ms) => setTimeout(callback, ms),
        clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
      };
      const client: ConsumerApi = platform;
      const options: StartWorkerOptions = { logger: silent, store, deadLetter, client, clock, healthServer: false };
      const worker = await startWorker(
        {
          baseUrl: emulator.url,
          tenant: 'dev-tenant',
          clientId: 'dev-client',
          clientSecret: 'dev-secret',
          destination,
          handlers: 'test/fixtures/handlers-behaviours',
          isolation: 'none',
          exitWhenIdle: true,
        },
        options,
      );
      const outcomes: WorkerEventMap['run:done'][0]['outcome'][] = [];
      worker.events.on('run:done', (e) => outcomes.push(e.outcome));
      expect((await worker.done).reason).toBe('idle');
      expect(outcomes).toEqual(['ok', 'ok', 'ok', 'ok', 'ok']);
      expect(done.size).toBe(5);
    } finally {
      await platform.close();
      await emulator.close();
    }
  });
});
