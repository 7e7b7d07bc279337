/**
 * `openDeadLetters(url).replay(...)`: the current handlers run on recorded events through the same
 * loader and dispatcher as `run`, through the idempotency store, once, whatever the operators do at
 * the same time, and whatever killed an earlier replay.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDeadLetters, type ReplayOptions } from '../../src/dead-letter-admin/api.js';
import { replayKey } from '../../src/dead-letter-admin/replay.js';
import { deadLetteredKey } from '../../src/idempotency/key.js';
import { openDeadLetterStore } from '../../src/dead-letter/index.js';
import type { DeadLetterRecord } from '../../src/dead-letter/sink.js';
import { ErrorCodes, hasCode } from '../../src/errors.js';
import { createIdempotencyStore } from '../../src/idempotency/index.js';
import { deadLetter } from '../dead-letter/contract.js';

const FIXED = fileURLToPath(new URL('../fixtures/replay-handlers', import.meta.url));
const BROKEN = fileURLToPath(new URL('../fixtures/replay-handlers-broken', import.meta.url));
const PREFIX = 'dev-tenant:dev-consumer';
const root = mkdtempSync(join(tmpdir(), 'dw-replay-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let dir: string;
let sinkUrl: string;
let idempotencyUrl: string;
let effectsFile: string;
let count = 0;
beforeEach(() => {
  dir = join(root, `t${++count}`);
  sinkUrl = `file:${join(dir, 'dead-letter.jsonl')}`;
  idempotencyUrl = `sqlite:${join(dir, 'idempotency.sqlite')}`;
  effectsFile = join(dir, 'effects.log');
  process.env.DW_TEST_EFFECTS_FILE = effectsFile;
});
afterEach(() => {
  delete process.env.DW_TEST_EFFECTS_FILE;
});

/** Event ids in the order the handler ran them (one line per run). */
function effects(): string[] {
  if (!existsSync(effectsFile)) return [];
  return readFileSync(effectsFile, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(' ')[0]!);
}

function order(eventId: string, data: Record<string, unknown> = { poison: true }, extra: Partial<DeadLetterRecord> = {}): DeadLetterRecord {
  return deadLetter({ eventId, handler: 'orders', data, ...extra });
}

async function seed(...records: DeadLetterRecord[]): Promise<void> {
  const sink = await openDeadLetterStore(sinkUrl, { prefix: PREFIX });
  for (const record of records) await sink.write(record);
  await sink.close();
}

function options(overrides: Partial<ReplayOptions> = {}): ReplayOptions {
  return { handlersDir: FIXED, isolation: 'none', idempotencyUrl, visibilitySeconds: 10, ...overrides };
}

async function withSink<T>(action: (sink: Awaited<ReturnType<typeof openDeadLetters>>) => Promise<T>): Promise<T> {
  const sink = await openDeadLetters(sinkUrl);
  try {
    return await action(sink);
  } finally {
    await sink.close();
  }
}

describe('replay', () => {
  it.each(['none', 'thread'] as const)('runs each dead record once (isolation %s), marks it replayed; a second replay runs nothing', async (isolation) => {
    await seed(order('o-1'), order('o-2'), order('o-3', { poison: true }, { handler: 'orders', reason: 'permanent' }));
    const results: string[] = [];
    const report = await withSink((sink) => sink.replay({}, options({ isolation, onResult: (r) => results.push(`${r.id} ${r.outcome}`) })));
    expect(report.ok).toBe(true);
    expect(results.sort()).toEqual(['orders:o-1 replayed', 'orders:o-2 replayed', 'orders:o-3 replayed']);
    expect(effects().sort()).toEqual(['o-1', 'o-2', 'o-3']);
    const after = await withSink(async (sink) => {
      const records = [];
      for await (const record of sink.all()) records.push(record);
      return records;
    });
    expect(after.map((r) => [r.id, r.state, r.replayAttempts, typeof r.replayedAt])).toEqual(
      ['o-1', 'o-2', 'o-3'].map((id) => [`orders:${id}`, 'replayed', 1, 'string']),
    );

    const second = await withSink((sink) => sink.replay({}, options({ isolation })));
    expect(second).toMatchObject({ ok: true, selected: [], results: [] });
    const byId = await withSink((sink) => sink.replay({ ids: ['orders:o-1'] }, options({ isolation })));
    expect(byId.results.map((r) => r.outcome)).toEqual(['already-replayed']);
    expect(byId.ok).toBe(true);
    expect(effects()).toHaveLength(3);
  });

  it('runs a record only while its key is dead-lettered: one a later delivery applied becomes resolved, and runs nothing', async () => {
    // o-1: the worker wrote its marks (done, and how it ended). o-2: the worker was killed after the
    // dead-letter write, and the redelivery applied the event (its done mark only). o-3: killed, not
    // redelivered yet (no mark at all): the replay runs it and holds the key against the redelivery.
    await seed(...['o-1', 'o-2', 'o-3'].map((id) => order(id, { poison: true }, { deadLetterMark: true })));
    const store = await createIdempotencyStore(idempotencyUrl, { prefix: PREFIX, doneTtlMs: 600_000 });
    await store.markDone(['orders:o-1', deadLetteredKey('orders:o-1'), 'orders:o-2']);
    await store.close();
    const results: string[] = [];
    const report = await withSink((sink) => sink.replay({}, options({ onResult: (r) => results.push(`${r.id} ${r.outcome}`) })));
    expect(report.ok).toBe(true);
    expect(results.sort()).toEqual(['orders:o-1 replayed', 'orders:o-2 resolved', 'orders:o-3 replayed']);
    expect(effects().sort()).toEqual(['o-1', 'o-3']);
    const states = await withSink(async (sink) => {
      const out: [string, string, string][] = [];
      for await (const r of sink.all()) out.push([r.id, r.state, typeof r.resolvedAt]);
      return out;
    });
    expect(states).toEqual([
      ['orders:o-1', 'replayed', 'undefined'],
      ['orders:o-2', 'resolved', 'string'],
      ['orders:o-3', 'replayed', 'undefined'],
    ]);
    // Nothing is left to replay, and a replay by id reports the state as it is.
    expect((await withSink((sink) => sink.replay({}, options()))).selected).toEqual([]);
    expect((await withSink((sink) => sink.replay({ ids: ['orders:o-2'] }, options()))).results.map((r) => r.outcome)).toEqual(['resolved']);
    expect(effects()).toHaveLength(2);
    // A record of an older worker (no mark of how its key ended) runs as before.
    await seed(order('o-4'));
    const old = await createIdempotencyStore(idempotencyUrl, { prefix: PREFIX, doneTtlMs: 600_000 });
    await old.markDone(['orders:o-4']);
    await old.close();
    expect((await withSink((sink) => sink.replay({}, options()))).results.map((r) => r.outcome)).toEqual(['replayed']);
  });

  it('a failure keeps the record dead with the new error; once the handler is fixed, a replay runs it', async () => {
    await seed(order('o-1'));
    const failed = await withSink((sink) => sink.replay({ handler: 'orders' }, options({ handlersDir: BROKEN })));
    expect(failed.ok).toBe(false);
    expect(failed.results).toMatchObject([{ id: 'orders:o-1', outcome: 'failed', error: { message: expect.stringContaining('poison order o-1') } }]);
    const record = await withSink((sink) => sink.get('orders:o-1'));
    expect(record).toMatchObject({ state: 'dead', replayAttempts: 1, error: { message: expect.stringContaining('poison order o-1 (attempt 6)') } });
    expect(effects()).toEqual([]);

    const fixed = await withSink((sink) => sink.replay({}, options()));
    expect(fixed.results.map((r) => r.outcome)).toEqual(['replayed']);
    expect(effects()).toEqual(['o-1']);
    expect(await withSink((sink) => sink.get('orders:o-1'))).toMatchObject({ state: 'replayed', replayAttempts: 2 });
  });

  it('two operators replaying at once run each record once between them, and both succeed', async () => {
    const records = Array.from({ length: 30 }, (_, i) => order(`o-${i}`, { poison: true }, { event: { ...order(`o-${i}`).event, subject: `s-${i % 7}` } }));
    await seed(...records);
    const [a, b] = await Promise.all([withSink((sink) => sink.replay({}, options())), withSink((sink) => sink.replay({}, options({ concurrency: 3 })))]);
    expect(a.ok && b.ok).toBe(true);
    expect(effects().sort()).toEqual(records.map((r) => r.event.id).sort());
    const outcomes = [...a.results, ...b.results].map((r) => r.outcome);
    expect(outcomes.filter((o) => o === 'replayed')).toHaveLength(30);
    expect(outcomes.every((o) => o === 'replayed' || o === 'already-replayed')).toBe(true);
  });

  it('a replay killed after the done mark, before the record changed: the next one runs nothing and marks it replayed', async () => {
    await seed(order('o-1'));
    const store = await createIdempotencyStore(idempotencyUrl, { prefix: PREFIX, doneTtlMs: 60_000 });
    await store.markDone(['orders:o-1', replayKey('orders', 'o-1')]);
    await store.close();
    const report = await withSink((sink) => sink.replay({}, options()));
    expect(report.results.map((r) => r.outcome)).toEqual(['already-replayed']);
    expect(effects()).toEqual([]);
    expect(await withSink((sink) => sink.get('orders:o-1'))).toMatchObject({ state: 'replayed' });
  });

  it('a replay killed while its handler ran: its claim expires, then the next replay runs the handler', async () => {
    await seed(order('o-1'));
    const store = await createIdempotencyStore(idempotencyUrl, { prefix: PREFIX, doneTtlMs: 60_000 });
    await store.markDone(['orders:o-1']); // dead-lettering marked the handler's key done
    expect((await store.claim([replayKey('orders', 'o-1')], 'dead-letters-replay:killed', 400)).states).toEqual(['new']);
    await store.close();
    const report = await withSink((sink) => sink.replay({}, options()));
    expect(report.results.map((r) => r.outcome)).toEqual(['replayed']);
    expect(effects()).toEqual(['o-1']);
  });

  it('waits for a worker running the event (killed before its done mark, now redelivered), and gives up at the deadline', async () => {
    await seed(order('o-1'));
    const store = await createIdempotencyStore(idempotencyUrl, { prefix: PREFIX, doneTtlMs: 60_000 });
    try {
      expect((await store.claim(['orders:o-1'], 'pod-b-0:lease:1', 60_000)).states).toEqual(['new']);
      const busy = await withSink((sink) => sink.replay({}, options({ visibilitySeconds: 1 })));
      expect(busy.results).toMatchObject([{ outcome: 'failed', error: { code: ErrorCodes.STORE } }]);
      // Nothing ran, so the record keeps its error and counts no replay.
      expect(await withSink((sink) => sink.get('orders:o-1'))).toMatchObject({ state: 'dead', replayAttempts: 0, error: { message: 'handler failed on o-1' } });

      // The worker's run failed again (claim released, not done): the replay holds the handler's key
      // and marks it done with its effect, so the redelivery skips the event.
      await store.release(['orders:o-1'], 'pod-b-0:lease:1');
      const replayed = await withSink((sink) => sink.replay({}, options()));
      expect(replayed.results.map((r) => r.outcome)).toEqual(['replayed']);
      expect((await store.claim(['orders:o-1'], 'pod-b-0:lease:2', 60_000)).states).toEqual(['done']);
      expect(effects()).toEqual(['o-1']);
    } finally {
      await store.close();
    }
  });

  it('same timeouts as run: a handler that never settles fails at the deadline and the record stays dead', async () => {
    await seed(order('o-1', { hang: true }));
    const report = await withSink((sink) => sink.replay({}, options({ visibilitySeconds: 2 })));
    expect(report.results).toMatchObject([{ outcome: 'failed', error: { code: ErrorCodes.HANDLER_TIMEOUT } }]);
    expect(await withSink((sink) => sink.get('orders:o-1'))).toMatchObject({ state: 'dead', error: { code: ErrorCodes.HANDLER_TIMEOUT } });
  });

  it('a record of a handler no longer loaded fails, naming it; a subject after a failure waits its turn', async () => {
    const gone = order('g-1', {}, { handler: 'retired' });
    const first = order('s-1', { fail: true }, { event: { ...order('s-1').event, subject: 'same', sequence: '10', data: { fail: true } } });
    const second = order('s-2', {}, { event: { ...order('s-2').event, subject: 'same', sequence: '11', data: {} } });
    const other = order('x-1', {}, { event: { ...order('x-1').event, subject: 'other', data: {} } });
    // Written in reverse: the replay still runs a subject in stream order.
    await seed(gone, second, first, other);
    const report = await withSink((sink) => sink.replay({}, options()));
    const outcome = Object.fromEntries(report.results.map((r) => [r.id, r.outcome]));
    expect(outcome).toEqual({ 'retired:g-1': 'failed', 'orders:s-1': 'failed', 'orders:s-2': 'skipped', 'orders:x-1': 'replayed' });
    expect(report.results.find((r) => r.id === 'retired:g-1')?.error?.message).toContain('handler retired is not among the handlers loaded');
    expect(effects()).toEqual(['x-1']);
  });

  it('--dry-run selects without running; state must be dead; ids must exist', async () => {
    await seed(order('o-1'), order('o-2'));
    const dry = await withSink((sink) => sink.replay({}, options({ dryRun: true })));
    expect(dry.selected.map((r) => r.id)).toEqual(['orders:o-1', 'orders:o-2']);
    expect(effects()).toEqual([]);
    const wrongState = await withSink((sink) => sink.replay({ state: 'replayed' }, options())).catch((err: unknown) => err);
    expect(hasCode(wrongState, ErrorCodes.CONFIG)).toBe(true);
    const unknown = await withSink((sink) => sink.replay({ ids: ['orders:nope'] }, options())).catch((err: unknown) => err as Error);
    expect(hasCode(unknown, ErrorCodes.CONFIG)).toBe(true);
    expect((unknown as Error).message).toContain('no dead-letter record "orders:nope"');
  });
});

describe('list, get and purge', () => {
  it('pages with a cursor; get names the prefixes when an id is ambiguous', async () => {
    await seed(...Array.from({ length: 7 }, (_, i) => order(`o-${i}`, {}, { deadLetteredAt: new Date(Date.now() - 10_000 + i).toISOString() })));
    const other = await openDeadLetterStore(sinkUrl, { prefix: 'other-tenant:consumer' });
    await other.write(order('o-1'));
    await other.close();
    await withSink(async (sink) => {
      const first = await sink.list({ limit: 3, state: 'dead' });
      const second = await sink.list({ limit: 3, state: 'dead', after: first.next! });
      const third = await sink.list({ limit: 3, state: 'dead', after: second.next! });
      expect([...first.records, ...second.records, ...third.records].map((r) => `${r.prefix}/${r.id}`)).toHaveLength(8);
      expect(third.next).toBeUndefined();
      const ambiguous = await sink.get('orders:o-1').then(
        () => '',
        (err: unknown) => (err as Error).message,
      );
      expect(ambiguous).toContain('dev-tenant:dev-consumer, other-tenant:consumer');
      expect(await sink.list({ limit: 0 }).catch((err: unknown) => (err as Error).message)).toBe('page size must be 1..10000 (got 0)');
    });
    const scoped = await openDeadLetters(sinkUrl, { prefix: PREFIX });
    expect((await scoped.get('orders:o-1'))?.prefix).toBe(PREFIX);
    await scoped.close();
  });

  it('purges by age or by id, dropping the event data and the stack; never without a selection', async () => {
    await seed(order('old', { secret: 'x' }, { deadLetteredAt: new Date(Date.now() - 3 * 86_400_000).toISOString() }), order('new'));
    await withSink(async (sink) => {
      expect(await sink.selectForPurge({}).catch((err: unknown) => hasCode(err, ErrorCodes.CONFIG))).toBe(true);
      expect((await sink.selectForPurge({}, { olderThanMs: 86_400_000 })).map((r) => r.id)).toEqual(['orders:old']);
      const purged = await sink.purge({}, { olderThanMs: 86_400_000 });
      expect(purged).toMatchObject([{ id: 'orders:old', state: 'purged', event: { id: 'old', data: null } }]);
      expect(purged[0]!.error.stack).toBeUndefined();
      expect(await sink.purge({}, { olderThanMs: 86_400_000 })).toEqual([]);
      expect((await sink.purge({ ids: ['orders:new'] })).map((r) => r.id)).toEqual(['orders:new']);
      // A purged record is not replayed: its data is gone.
      const replay = await sink.replay({ ids: ['orders:new'] }, options());
      expect(replay.results.map((r) => r.outcome)).toEqual(['purged']);
      expect(replay.ok).toBe(false);
    });
  });
});
