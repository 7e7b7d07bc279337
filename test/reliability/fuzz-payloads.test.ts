import { join } from 'node:path';
import fc from 'fast-check';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { startWorker } from '../../src/worker/start.js';
import { consumerState, createConsumer, deadLetters, silent, tempDir, workerConfig, FAST } from '../worker/harness.js';
import { readFileSync, existsSync } from 'node:fs';
import { FUZZ_SEED } from './fuzz-http.js';

/**
 * Generated event payloads into a real worker (piscina threads, structured clone across them):
 * any JSON `data` (wrong shapes, missing fields, odd keys such as `__proto__`), very large events
 * and deep nesting. Each event either takes effect or is dead-lettered; the worker never dies and
 * the cursor reaches the head.
 */
const HANDLERS = fileURLToPath(new URL('../fixtures/chaos-payloads', import.meta.url));

let emulator: RunningEmulator;
beforeAll(async () => {
  emulator = await startEmulator({ port: 0 });
});
afterAll(async () => {
  await emulator?.close();
});

/** The handler's own rule: `data.current.name` must be a string. */
function valid(data: unknown): boolean {
  const current = (data as { current?: unknown } | null)?.current;
  return typeof current === 'object' && current !== null && typeof (current as { name?: unknown }).name === 'string';
}

function deep(depth: number): unknown {
  let value: unknown = { current: { name: 'deep' } };
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

describe(`fuzzing event payloads into the worker (seed ${FUZZ_SEED})`, () => {
  it('every event takes effect or is dead-lettered, the worker stays up, cursor at head', async () => {
    const dir = tempDir('payloads');
    const record = join(dir, 'record.log');
    process.env.DW_PAYLOAD_RECORD = record;
    const destination = await createConsumer(emulator, 'payloads');
    const shaped = fc.record(
      { current: fc.record({ name: fc.oneof(fc.string(), fc.jsonValue()) }, { requiredKeys: [] }), previous: fc.jsonValue() },
      { requiredKeys: [] },
    );
    const generated = fc.sample(fc.oneof(fc.jsonValue({ maxDepth: 5 }), shaped, fc.constant(null)), { seed: FUZZ_SEED + 2, numRuns: 400 });
    const huge = 'h'.repeat(700_000);
    const datas: unknown[] = [
      ...generated,
      { current: { name: huge } },
      { current: { name: 42, blob: huge } },
      { current: { name: 'ok', extra: Array.from({ length: 20_000 }, (_, i) => i) } },
      deep(200),
      { __proto__: { current: { name: 'inherited' } } },
      JSON.parse('{"__proto__": {"current": {"name": "own proto key"}}}'),
      { current: { name: '' } },
      { current: { name: '\u0000\ud800 lone surrogate' } },
    ];
    const appended = emulator.appendEvents(
      'dev-tenant',
      datas.map((data, i) => ({ type: i % 2 === 0 ? 'payload.updated' : 'payload.created', subject: `p-${i % 31}`, data })),
    );
    // The data the worker receives is the JSON round trip of what was appended.
    const expectedOk = new Set(appended.filter((e) => valid(JSON.parse(JSON.stringify(e.data ?? null)))).map((e) => e.id));
    expect(expectedOk.size).toBeGreaterThan(20);
    expect(expectedOk.size).toBeLessThan(appended.length - 20);

    const worker = await startWorker(
      workerConfig(emulator, destination, dir, {
        handlersDir: HANDLERS,
        isolation: 'thread',
        workers: 2,
        limit: 25,
        maxAttempts: 2,
        exitWhenIdle: true,
        visibilitySeconds: 30,
      }),
      { logger: silent, timings: FAST },
    );
    expect(await worker.done).toEqual({ reason: 'idle' });

    const ok = new Set(
      existsSync(record)
        ? readFileSync(record, 'utf8')
            .split('\n')
            .filter(Boolean)
            .map((l) => l.split(' ')[0])
        : [],
    );
    const dead = new Set(deadLetters(join(dir, 'dead-letter.jsonl')).map((d) => d.event.id));
    expect([...ok].sort()).toEqual([...expectedOk].sort());
    expect(dead.size).toBe(appended.length - expectedOk.size);
    for (const id of dead) expect(ok.has(id)).toBe(false);
    const state = consumerState(emulator, destination);
    expect(state.committed).toBe(state.head);
  }, 90_000);
});
