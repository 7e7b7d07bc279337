import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { WorkerConfig } from '../../src/config/types.js';
import { workerConfig } from '../worker/harness.js';

/** A worker against a test emulator at `url` (memory store, dead letters in `dir`), with --otel unless overridden. */
export function tracingTestConfig(url: string, dir: string, isolation: 'none' | 'thread', overrides: Partial<WorkerConfig> = {}): WorkerConfig {
  const id = randomUUID().slice(0, 8);
  return workerConfig({ url }, 'dev-consumer', dir, {
    handlersDir: join(import.meta.dirname, '..', 'fixtures', 'tracing-handlers'),
    workerIdPrefix: `traces-${id}`,
    visibilitySeconds: 30,
    concurrency: 4,
    maxAttempts: 1,
    idempotencyPrefix: `traces-${id}`,
    idempotencyTtlMs: 60_000,
    deadLetterUrl: `file:${join(dir, `dead-letter-${id}.jsonl`)}`,
    logLevel: 'info',
    isolation,
    shutdownTimeoutSeconds: 2,
    otel: true,
    ...overrides,
  });
}
