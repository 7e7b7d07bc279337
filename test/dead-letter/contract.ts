/**
 * The one contract every dead-letter sink adapter passes (as test/idempotency/contract.ts does for
 * the stores): file, SQLite, Redis and PostgreSQL keep the same records the same way.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { afterPurge, afterReplay, afterFailedReplay, afterResolved } from '../../src/dead-letter/record.js';
import type { DeadLetterRecord, StoredDeadLetter } from '../../src/dead-letter/sink.js';
import type { DeadLetterStore } from '../../src/dead-letter/store.js';
import { DEAD_LETTER_ERROR_CODE } from '../../src/dead-letter/errors.js';
import { hasCode } from '../../src/errors.js';

/** Opens the adapter under test for `prefix` (undefined: every prefix, read only). */
export type MakeSink = (prefix: string | undefined) => Promise<DeadLetterStore>;

export interface SinkContractOptions {
  /** The adapter counts dead records in one query (the gauge); file does not. */
  counts: boolean;
  /** Removes what a test wrote under its prefixes (servers shared with other tests keep records forever). */
  cleanup?: (prefixes: string[]) => Promise<void>;
}

let sequence = 0;

/** A record as the worker writes it: `at` is its deadLetteredAt, in ms. */
export function deadLetter(overrides: Partial<DeadLetterRecord> & { eventId?: string; type?: string; at?: number; data?: unknown } = {}): DeadLetterRecord {
  const { eventId = `evt-${randomUUID().slice(0, 8)}`, type = 'orders.created', at = Date.now(), data = { order: 1 }, ...rest } = overrides;
  sequence += 1;
  return {
    event: {
      specversion: '1.0',
      id: eventId,
      type,
      subject: `order-${sequence % 3}`,
      sequence: String(1_000 + sequence),
      data,
      time: new Date(at).toISOString(),
    },
    handler: 'orders/created',
    reason: 'max-attempts',
    error: { message: `handler failed on ${eventId}`, stack: 'Error: boom\n    at handle', code: 'E_BOOM' },
    attempt: 5,
    generation: 2,
    workerId: 'pod-a-0',
    leaseId: `lease-${sequence}`,
    firstFailedAt: new Date(at - 1_000).toISOString(),
    deadLetteredAt: new Date(at).toISOString(),
    ...rest,
  };
}

const ids = (records: readonly StoredDeadLetter[]) => records.map((r) => r.id);

export function sinkContract(name: string, makeSink: MakeSink, options: SinkContractOptions): void {
  describe(`dead-letter sink contract: ${name}`, () => {
    const opened: DeadLetterStore[] = [];
    const prefixes: string[] = [];
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((sink) => sink.close()));
      await options.cleanup?.(prefixes.splice(0));
    });
    /** The adapter for `prefix` (default: a new one); `null`: for every prefix. */
    async function open(prefix: string | null = newPrefix()): Promise<DeadLetterStore> {
      const sink = await makeSink(prefix ?? undefined);
      opened.push(sink);
      return sink;
    }
    function newPrefix(): string {
      const prefix = `test-${randomUUID()}`;
      prefixes.push(prefix);
      return prefix;
    }

    it('keeps the whole record, with its id <handler>:<event id>, its prefix and state dead', async () => {
      const prefix = newPrefix();
      const sink = await open(prefix);
      const record = deadLetter({ eventId: 'evt-1', data: { nested: { big: 12345678901234, text: 'é ü 😀' } } });
      await sink.write(record);
      const [stored] = await sink.get('orders/created:evt-1');
      expect(stored).toEqual({ ...record, id: 'orders/created:evt-1', prefix, state: 'dead', replayAttempts: 0 });
      expect(await sink.list({ limit: 10 })).toEqual([stored]);
      expect(await sink.get('orders/created:nope')).toEqual([]);
    });

    it('a record written twice stays one, as first written; other handlers and events are other records', async () => {
      const sink = await open();
      const first = deadLetter({ eventId: 'evt-1', attempt: 5 });
      await sink.write(first);
      await sink.write({ ...first, attempt: 6, generation: 3, error: { message: 'again' }, deadLetteredAt: new Date(Date.now() + 5_000).toISOString() });
      await sink.write(deadLetter({ eventId: 'evt-1', handler: 'audit' }));
      await sink.write(deadLetter({ eventId: 'evt-2' }));
      const records = await sink.list({ limit: 10 });
      expect(ids(records).sort()).toEqual(['audit:evt-1', 'orders/created:evt-1', 'orders/created:evt-2']);
      expect(records.find((r) => r.id === 'orders/created:evt-1')).toMatchObject({
        attempt: 5,
        generation: 2,
        error: first.error,
        deadLetteredAt: first.deadLetteredAt,
      });
    });

    it('two instances writing one record at once leave one record (a shared sink)', async () => {
      const prefix = newPrefix();
      const [a, b] = [await open(prefix), await open(prefix)];
      const records = Array.from({ length: 20 }, (_, i) => deadLetter({ eventId: `race-${i}` }));
      await Promise.all(records.flatMap((record) => [a.write(record), b.write({ ...record, workerId: 'pod-b-0' })]));
      const listed = await a.list({ limit: 100 });
      expect(listed).toHaveLength(20);
      expect(new Set(ids(listed)).size).toBe(20);
      expect(ids(await b.list({ limit: 100 }))).toEqual(ids(listed));
    });

    it('lists in dead-letter order and pages with a key: every record once, also at equal times', async () => {
      const sink = await open();
      const base = Date.now() - 60_000;
      const written = [];
      for (let i = 0; i < 25; i++) {
        const record = deadLetter({ eventId: `page-${String(i).padStart(2, '0')}`, at: base + Math.floor(i / 5) * 1_000 });
        written.push(record);
      }
      // Written out of order: the listing orders them.
      for (const record of [...written].reverse()) await sink.write(record);
      const seen: StoredDeadLetter[] = [];
      let after: { atMs: number; prefix: string; id: string } | undefined;
      for (;;) {
        const page = await sink.list({ limit: 7, ...(after === undefined ? {} : { after }) });
        seen.push(...page);
        if (page.length < 7) break;
        const last = page[page.length - 1]!;
        after = { atMs: Date.parse(last.deadLetteredAt), prefix: last.prefix, id: last.id };
      }
      expect(ids(seen)).toEqual(written.map((r) => `orders/created:${r.event.id}`));
    });

    it('filters by handler, type (exact, prefix.* and *), reason, state and time range', async () => {
      const sink = await open();
      const base = Date.now() - 3_600_000;
      await sink.write(deadLetter({ eventId: 'a', type: 'orders.created', reason: 'permanent', at: base }));
      await sink.write(deadLetter({ eventId: 'b', type: 'orders.cancelled', at: base + 60_000 }));
      await sink.write(deadLetter({ eventId: 'c', type: 'ordersX.created', handler: 'audit', at: base + 120_000 }));
      const [b] = await sink.get('orders/created:b');
      expect(await sink.update(afterReplay(b!), 'dead')).toBe(true);
      const listed = async (filter: Parameters<DeadLetterStore['list']>[0]) => ids(await sink.list(filter)).sort();
      expect(await listed({ limit: 10, handler: 'audit' })).toEqual(['audit:c']);
      expect(await listed({ limit: 10, type: 'orders.created' })).toEqual(['orders/created:a']);
      expect(await listed({ limit: 10, type: 'orders.*' })).toEqual(['orders/created:a', 'orders/created:b']);
      expect(await listed({ limit: 10, type: '*' })).toEqual(['audit:c', 'orders/created:a', 'orders/created:b']);
      expect(await listed({ limit: 10, reason: 'permanent' })).toEqual(['orders/created:a']);
      expect(await listed({ limit: 10, state: 'dead' })).toEqual(['audit:c', 'orders/created:a']);
      expect(await listed({ limit: 10, state: 'replayed' })).toEqual(['orders/created:b']);
      expect(await listed({ limit: 10, since: new Date(base + 60_000) })).toEqual(['audit:c', 'orders/created:b']);
      expect(await listed({ limit: 10, until: new Date(base + 60_000) })).toEqual(['orders/created:a']);
      expect(await listed({ limit: 10, since: new Date(base + 1), until: new Date(base + 120_000), state: 'replayed', type: 'orders.*' })).toEqual([
        'orders/created:b',
      ]);
    });

    it('changes a record only from the state expected (compare-and-set)', async () => {
      const sink = await open();
      await sink.write(deadLetter({ eventId: 'cas' }));
      const [record] = await sink.get('orders/created:cas');
      const failed = afterFailedReplay(record!, { message: 'still broken', code: 'E_AGAIN' });
      expect(await sink.update(failed, 'dead')).toBe(true);
      expect((await sink.get('orders/created:cas'))[0]).toMatchObject({ state: 'dead', replayAttempts: 1, error: { message: 'still broken' } });
      const replayed = afterReplay(failed);
      expect(await sink.update(replayed, 'dead')).toBe(true);
      // A second operator's change, made from the old state, is refused.
      expect(await sink.update(afterFailedReplay(record!, { message: 'late' }), 'dead')).toBe(false);
      expect(await sink.update(afterPurge(record!), 'purged')).toBe(false);
      expect((await sink.get('orders/created:cas'))[0]).toEqual(replayed);
    });

    it('keeps a record resolved (its key applied meanwhile) as a state of its own, filtered and counted apart', async () => {
      const sink = await open();
      await sink.write(deadLetter({ eventId: 'applied' }));
      await sink.write(deadLetter({ eventId: 'still-dead' }));
      const [record] = await sink.get('orders/created:applied');
      expect(await sink.update(afterResolved(record!), 'dead')).toBe(true);
      expect(await sink.update(afterReplay(record!), 'dead')).toBe(false);
      expect((await sink.get('orders/created:applied'))[0]).toMatchObject({ state: 'resolved', resolvedAt: expect.any(String) });
      expect(ids(await sink.list({ limit: 10, state: 'resolved' }))).toEqual(['orders/created:applied']);
      expect(ids(await sink.list({ limit: 10, state: 'dead' }))).toEqual(['orders/created:still-dead']);
      const counts = await sink.countDead?.();
      if (counts !== undefined) expect(counts.reduce((sum, c) => sum + c.count, 0)).toBe(1);
    });

    it('a record replayed or purged starts over as dead when the event is dead-lettered again', async () => {
      const sink = await open();
      const first = deadLetter({ eventId: 'again', at: Date.now() - 10_000 });
      await sink.write(first);
      const [stored] = await sink.get('orders/created:again');
      await sink.update(afterPurge(stored!), 'dead');
      expect((await sink.get('orders/created:again'))[0]).toMatchObject({ state: 'purged', event: { data: null } });
      const second = deadLetter({ eventId: 'again', attempt: 9, data: { retry: true } });
      await sink.write(second);
      expect(await sink.get('orders/created:again')).toEqual([
        { ...second, id: 'orders/created:again', prefix: stored!.prefix, state: 'dead', replayAttempts: 0 },
      ]);
      expect(ids(await sink.list({ limit: 10, state: 'dead' }))).toEqual(['orders/created:again']);
    });

    if (options.counts) {
      it('counts dead records per handler and reason, following every change of state', async () => {
        const sink = await open();
        await sink.write(deadLetter({ eventId: '1' }));
        await sink.write(deadLetter({ eventId: '2' }));
        await sink.write(deadLetter({ eventId: '1' })); // the same record again: no new count
        await sink.write(deadLetter({ eventId: '3', reason: 'permanent' }));
        await sink.write(deadLetter({ eventId: '4', handler: 'audit' }));
        const counted = async () => (await sink.countDead!()).sort((a, b) => `${a.handler}${a.reason}`.localeCompare(`${b.handler}${b.reason}`));
        expect(await counted()).toEqual([
          { handler: 'audit', reason: 'max-attempts', count: 1 },
          { handler: 'orders/created', reason: 'max-attempts', count: 2 },
          { handler: 'orders/created', reason: 'permanent', count: 1 },
        ]);
        const [two] = await sink.get('orders/created:2');
        await sink.update(afterFailedReplay(two!, { message: 'x' }), 'dead'); // still dead
        await sink.update(afterReplay(two!), 'dead');
        const [four] = await sink.get('audit:4');
        await sink.update(afterPurge(four!), 'dead');
        expect(await counted()).toEqual([
          { handler: 'orders/created', reason: 'max-attempts', count: 1 },
          { handler: 'orders/created', reason: 'permanent', count: 1 },
        ]);
        await sink.write(deadLetter({ eventId: '2' })); // dead-lettered again
        expect((await counted()).find((c) => c.reason === 'max-attempts')?.count).toBe(2);
      });
    }

    it('keeps prefixes apart; opened without one, it reads every prefix and refuses to write', async () => {
      const [left, right] = [newPrefix(), newPrefix()];
      const leftSink = await open(left);
      const rightSink = await open(right);
      await leftSink.write(deadLetter({ eventId: 'shared-id' }));
      await rightSink.write(deadLetter({ eventId: 'shared-id' }));
      await rightSink.write(deadLetter({ eventId: 'right-only' }));
      expect((await leftSink.list({ limit: 10 })).map((r) => r.prefix)).toEqual([left]);
      expect(ids(await leftSink.get('orders/created:right-only'))).toEqual([]);
      const all = await open(null);
      expect((await all.get('orders/created:shared-id')).map((r) => r.prefix).sort()).toEqual([left, right].sort());
      const mine = (await all.list({ limit: 10_000 })).filter((r) => r.prefix === left || r.prefix === right);
      expect(mine).toHaveLength(3);
      const failure = await all.write(deadLetter()).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(hasCode(failure, DEAD_LETTER_ERROR_CODE)).toBe(true);
    });

    it('close is idempotent; a write after it rejects with DW_ERR_DEAD_LETTER (the event stays retried)', async () => {
      const sink = await makeSink(newPrefix());
      await sink.write(deadLetter());
      await sink.close();
      await sink.close();
      const failure = await sink.write(deadLetter()).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(hasCode(failure, DEAD_LETTER_ERROR_CODE), String(failure)).toBe(true);
    });
  });
}
