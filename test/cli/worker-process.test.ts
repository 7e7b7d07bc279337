import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { resolveWorkerConfig } from '../../src/config/load.js';
import { runWorkerProcess } from '../../src/cli/worker-process.js';
import type { CliContext } from '../../src/cli/context.js';
import type { WorkerHandle, StartWorker } from '../../src/cli/seams.js';
import { ConfigError, DurableWorkerError, ErrorCodes } from '../../src/errors.js';
import { createLogger } from '../../src/observability/logger.js';

const SECRET = 'wp-secret-123';

function harness() {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (c) => (out += String(c)));
  stderr.on('data', (c) => (err += String(c)));
  const context: CliContext = { stdout, stderr, env: {}, cwd: process.cwd(), forceExit: false };
  const logger = createLogger({ level: 'info', pretty: false, destination: stdout });
  const config = resolveWorkerConfig({
    baseUrl: 'http://127.0.0.1:1',
    destination: 'd',
    tenant: 't',
    clientId: 'c',
    clientSecret: SECRET,
    idempotency: `redis://:${SECRET}@cache:6379`,
  });
  return { context, logger, config, out: () => out, err: () => err };
}

function fakeWorker(done: WorkerHandle['done']): { worker: WorkerHandle; closes: () => number } {
  let closes = 0;
  return {
    worker: {
      close: async () => void closes++,
      done,
      metricsUrl: 'http://127.0.0.1:9/metrics',
    },
    closes: () => closes,
  };
}

describe('runWorkerProcess', () => {
  it('exits 0 when the worker goes idle, closes it, and logs the config without secrets', async () => {
    const h = harness();
    const fake = fakeWorker(Promise.resolve({ reason: 'idle' }));
    let received: unknown;
    const start: StartWorker = async (config, options) => {
      received = options?.logger;
      expect(config).toBe(h.config);
      return fake.worker;
    };
    const listenersBefore = process.listenerCount('SIGTERM');
    expect(await runWorkerProcess(h.config, h.logger, h.context, start)).toBe(0);
    expect(process.listenerCount('SIGTERM')).toBe(listenersBefore);
    expect(received).toBe(h.logger);
    expect(fake.closes()).toBe(1);
    expect(h.out()).toContain('starting durable-worker');
    expect(h.out()).toContain('caught up and idle');
    expect(h.out()).toContain('redis://:***@cache:6379');
    expect(h.out()).not.toContain(SECRET);
  });

  it('exits 1 with one stderr line when the worker dies', async () => {
    const h = harness();
    const fake = fakeWorker(Promise.resolve({ reason: 'fatal', error: new Error('store unreachable') }));
    expect(await runWorkerProcess(h.config, h.logger, h.context, async () => fake.worker)).toBe(1);
    expect(h.err()).toBe('durable-worker: store unreachable\n');
  });

  it('turns a handler load failure at start into a ConfigError (exit 2)', async () => {
    const h = harness();
    const start: StartWorker = async () => {
      throw new DurableWorkerError(ErrorCodes.HANDLER_LOAD, '/x/handlers/a.ts: the default export is not a handler');
    };
    await expect(runWorkerProcess(h.config, h.logger, h.context, start)).rejects.toBeInstanceOf(ConfigError);
  });

  it('passes other start failures through (exit 1)', async () => {
    const h = harness();
    const failure = new Error('boom');
    await expect(
      runWorkerProcess(h.config, h.logger, h.context, async () => {
        throw failure;
      }),
    ).rejects.toBe(failure);
  });
});
