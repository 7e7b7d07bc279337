/**
 * Without --otel no OpenTelemetry SDK module is loaded, in the main thread or a handler thread (the
 * API, a small dependency of prom-client and redis too, may be). Every OpenTelemetry package
 * resolves to CommonJS, so the CommonJS cache of a thread lists what it loaded. Its own file: the
 * check must run in a process where nothing turned tracing on before.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startWorker } from '../../src/worker/start.js';
import { startSourcesTestbed, type SourcesTestbed } from '../emulator/sources-helpers.js';
import { waitFor } from '../fixtures/wait-for.js';
import { tracingTestConfig } from './worker-config.js';

const require = createRequire(import.meta.url);
const PROBE = join(import.meta.dirname, '..', 'fixtures', 'tracing-probe');
/** Modules of the SDK side: anything of @opentelemetry but the API. */
const sdkModules = (paths: readonly string[]) => paths.filter((path) => path.includes('/@opentelemetry/') && !path.includes('/@opentelemetry/api/'));

let testbed: SourcesTestbed;
let dir: string;
beforeAll(async () => {
  testbed = await startSourcesTestbed();
  dir = mkdtempSync(join(tmpdir(), 'dw-tracing-off-'));
});
afterAll(async () => {
  await testbed.close();
  vi.unstubAllEnvs();
  rmSync(dir, { recursive: true, force: true });
});

async function runOnce(isolation: 'none' | 'thread', otel: boolean): Promise<string[]> {
  const probeFile = join(dir, `probe-${randomUUID()}.jsonl`);
  vi.stubEnv('TRACING_PROBE_FILE', probeFile);
  // Tracing on (the control) exports nowhere: the exporter is not the point here.
  vi.stubEnv('OTEL_TRACES_EXPORTER', 'none');
  const config = tracingTestConfig(testbed.url, dir, isolation, { handlersDir: PROBE, logLevel: 'silent', maxAttempts: 3, otel });
  const worker = await startWorker(config, { healthServer: false });
  try {
    await testbed.ingestApplied(testbed.newSourceId(), { entries: [{ id: `e-${randomUUID()}`, properties: [{ id: 'title', value: 'x' }] }] });
    await waitFor('the probe handler to run', () => {
      try {
        return readFileSync(probeFile, 'utf8').length > 0;
      } catch {
        return false;
      }
    });
  } finally {
    await worker.close();
  }
  return (JSON.parse(readFileSync(probeFile, 'utf8').split('\n')[0]!) as { loaded: string[] }).loaded;
}

describe('with tracing off no SDK module is loaded', () => {
  it('in the main thread and its in-process handlers (--isolation none)', async () => {
    const inHandler = await runOnce('none', false);
    expect(sdkModules(inHandler)).toEqual([]);
    expect(sdkModules(Object.keys(require.cache))).toEqual([]);
  });

  it('in a handler thread (--isolation thread), and the main thread still has none', async () => {
    expect(sdkModules(await runOnce('thread', false))).toEqual([]);
    expect(sdkModules(Object.keys(require.cache))).toEqual([]);
  });

  it('the control: with --otel the SDK is loaded in the thread and in the main thread', async () => {
    const inThread = await runOnce('thread', true);
    expect(inThread.some((path) => path.includes('/@opentelemetry/sdk-trace-node/'))).toBe(true);
    expect(sdkModules(Object.keys(require.cache)).some((path) => path.includes('/@opentelemetry/sdk-trace-node/'))).toBe(true);
  });
});
