import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { WorkerConfig } from '../../src/config/types.js';

/** A worker against a test emulator at `url` (memory store, dead letters in `dir`), with --otel unless overridden. */
export function tracingTestConfig(url: string, dir: string, isolation: 'none' | 'thread', overrides: Partial<WorkerConfig> = {}): WorkerConfig {
  const id = randomUUID().slice(0, 8);
  return {
    baseUrl: url,
    authUrl: url,
    destination: 'dev-consumer',
    tenant: 'dev-tenant',
    clientId: 'dev-client',
    clientSecret: 'dev-secret',
    handlersDir: join(import.meta.dirname, '..', 'fixtures', 'tracing-handlers'),
    workers: 1,
    workerIdPrefix: `traces-${id}`,
    limit: 20,
    visibilitySeconds: 30,
    concurrency: 4,
    maxAttempts: 1,
    idempotencyUrl: 'memory',
    idempotencyPrefix: `traces-${id}`,
    idempotencyTtlMs: 60_000,
    deadLetterUrl: `file:${join(dir, `dead-letter-${id}.jsonl`)}`,
    metricsPort: 0,
    metricsHost: '127.0.0.1',
    exitWhenIdle: false,
    logLevel: 'info',
    isolation,
    shutdownTimeoutSeconds: 2,
    forwardMode: 'binary',
    otel: true,
    ...overrides,
  };
}
