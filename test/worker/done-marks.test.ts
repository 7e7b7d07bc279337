import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { DoneMarkWriter } from '../../src/worker/done-marks.js';

/** A writer over a store that records its calls; `withFlush`: the store holds marks back (SQLite). */
function recordingWriter(withFlush: boolean) {
  const calls: string[] = [];
  const store = {
    markDone: async (keys: readonly string[]) => {
      calls.push(`markDone ${keys.join(',')}`);
    },
    ...(withFlush ? { flush: () => calls.push('flush') } : {}),
  };
  const pending: Promise<unknown>[] = [];
  return { writer: new DoneMarkWriter(store, pino({ level: 'silent' }), pending), calls, pending };
}

describe('DoneMarkWriter', () => {
  it('writes the keys of one turn in one call, a turn after the first', async () => {
    const { writer, calls, pending } = recordingWriter(true);
    writer.add('h:1');
    writer.add('h:2');
    expect(calls).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toEqual(['markDone h:1,h:2']);
    expect(pending).toHaveLength(1);
  });

  it('before an ack, writes what it gathered and has the store commit what it holds back', async () => {
    const { writer, calls, pending } = recordingWriter(true);
    writer.add('h:1');
    writer.flushForAck();
    expect(calls).toEqual(['markDone h:1', 'flush']);
    // Nothing gathered: the store is still asked to commit (marks of earlier turns may wait in its group).
    writer.flushForAck();
    expect(calls).toEqual(['markDone h:1', 'flush', 'flush']);
    await Promise.all(pending);
  });

  it('works with a store that writes at once (no flush)', async () => {
    const { writer, calls, pending } = recordingWriter(false);
    writer.add('h:1');
    writer.flushForAck();
    await Promise.all(pending);
    expect(calls).toEqual(['markDone h:1']);
  });
});
