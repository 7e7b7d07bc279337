import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../cli/cli-process.js';

const HANDLERS = join(import.meta.dirname, '..', 'fixtures', 'tracing-handlers');

function runArgs(extra: string[]): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'dw-cli-otel-'));
  return [
    'run',
    '--base-url',
    'http://127.0.0.1:9',
    '--destination',
    'd',
    '--api-key',
    'k',
    '--handlers',
    HANDLERS,
    '--idempotency',
    'memory',
    '--dead-letter',
    `file:${join(dir, 'dl.jsonl')}`,
    '--metrics-port',
    '0',
    ...extra,
  ];
}

describe('durable-worker run --otel: what the SDK cannot honour is a configuration error (exit 2, one line)', () => {
  it('an OTLP protocol other than http/protobuf or http/json', async () => {
    const result = await runCli(runArgs(['--otel']), { env: { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' } });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      'durable-worker: OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json with --otel (got "grpc"; grpc is not bundled)\n',
    );
  });

  it('a value of DURABLE_WORKER_OTEL that is not a boolean', async () => {
    const result = await runCli(runArgs([]), { env: { DURABLE_WORKER_OTEL: 'maybe' } });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('durable-worker: --otel (from DURABLE_WORKER_OTEL) must be true or false (or 1/0) (got maybe)\n');
  });
});
