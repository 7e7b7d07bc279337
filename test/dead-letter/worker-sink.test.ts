import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDeadLetters } from '../../src/dead-letter-admin/api.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { startWorker } from '../../src/worker/start.js';
import { appendBehave, consumerState, createConsumer, FAST, silent, tempDir, waitFor, workerConfig } from '../worker/harness.js';

let emulator: RunningEmulator;
beforeAll(async () => {
  emulator = await startEmulator({ port: 0, logger: silent });
});
afterAll(async () => {
  await emulator?.close();
});

describe('the worker and its sink', () => {
  it('a sink that cannot write keeps the event retried (never acked without its record); once it can, the record is written once', async () => {
    const dir = tempDir('dead-letter-unwritable');
    // A file where the sink's folder should be: every write fails until it is replaced by a folder.
    const blocker = join(dir, 'sink');
    writeFileSync(blocker, '');
    const sinkUrl = `file:${join(blocker, 'dead-letter.jsonl')}`;
    const destination = await createConsumer(emulator);
    const [poison] = appendBehave(emulator, 1, () => ({ behaviour: 'permanent' }));
    const worker = await startWorker(workerConfig(emulator, destination, dir, { deadLetterUrl: sinkUrl, visibilitySeconds: 2 }), {
      logger: silent,
      timings: FAST,
    });
    try {
      let failures = 0;
      worker.events.on('run:done', (e) => {
        if (e.outcome === 'failed' && e.event.id === poison!.id) failures += 1;
      });
      await waitFor('the event retried a few times', () => failures >= 3, 20_000);
      const held = consumerState(emulator, destination);
      expect(held.committed).not.toBe(held.head);

      rmSync(blocker);
      mkdirSync(blocker);
      await waitFor(
        'the cursor past the event',
        () => {
          const state = consumerState(emulator, destination);
          return state.committed === state.head;
        },
        20_000,
      );
    } finally {
      await worker.close();
    }
    const sink = await openDeadLetters(sinkUrl);
    const records = [];
    for await (const record of sink.all()) records.push(record);
    await sink.close();
    expect(records.map((r) => [r.event.id, r.reason, r.state])).toEqual([[poison!.id, 'permanent', 'dead']]);
  });
});
