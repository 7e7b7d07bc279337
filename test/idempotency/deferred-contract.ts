/**
 * The contract every holder of deferred runs passes (as contract.ts for the claims): the in-memory
 * reference, SQLite, Redis and PostgreSQL run the same checks, each beside a store whose claims and
 * done marks its `defer` reads and drops.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { chainOf, type DeferredReason, type DeferredRun, type DeferredRuns } from '../../src/idempotency/deferred.js';
import type { IdempotencyStore } from '../../src/idempotency/store.js';
import type { CloudEvent } from '../../src/types.js';

/** A store and the deferred runs kept beside it, under one prefix. */
export interface DeferredHarness {
  store: IdempotencyStore;
  deferred: DeferredRuns;
}

export type MakeDeferred = (prefix: string) => Promise<DeferredHarness>;

const T0 = 1_765_000_000_000;

/** A run of `handler` on a fresh event of `subject` at `sequence`. */
export function deferredRun(
  handler: string,
  subject: string,
  sequence: string,
  options: { retryAtMs?: number; deferredAtMs?: number; reason?: DeferredReason; data?: unknown } = {},
): DeferredRun {
  const event: CloudEvent = {
    specversion: '1.0',
    id: `evt-${sequence}-${randomUUID().slice(0, 8)}`,
    type: 'orders.created',
    subject,
    sequence,
    data: options.data ?? { n: Number(sequence) },
    source: '/tenants/t1/sources/s1',
    time: '2026-12-07T06:00:00.000Z',
  };
  return {
    key: `${handler}:${event.id}`,
    handler,
    chain: chainOf(handler, subject),
    sequence,
    event,
    retryAtMs: options.retryAtMs ?? T0,
    deferredAtMs: options.deferredAtMs ?? T0 - 1_000,
    reason: options.reason ?? 'retry',
  };
}

const keysOf = (runs: readonly DeferredRun[]) => runs.map((run) => run.key);

export function deferredContract(name: string, make: MakeDeferred): void {
  describe(`deferred runs contract: ${name}`, () => {
    const opened: DeferredHarness[] = [];
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((harness) => harness.store.close()));
    });
    async function open(prefix: string = `test-${randomUUID()}`): Promise<DeferredHarness> {
      const harness = await make(prefix);
      opened.push(harness);
      return harness;
    }

    it('stores a run with its event exactly, and keeps its first deferral time on a second defer', async () => {
      const { deferred } = await open();
      const data = { text: 'zero \u0000 byte, é, 🎉', nested: { list: [1, 2.5, null, true], big: 9_007_199_254_740_991 }, empty: '' };
      const run = deferredRun('orders/created', 'order-1', '7', { data, retryAtMs: T0 + 5_000, deferredAtMs: T0 });
      run.event.traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
      await deferred.defer([run], 'worker-a');
      expect(await deferred.get(run.key)).toEqual(run);
      expect(await deferred.get('orders/created:missing')).toBeUndefined();

      await deferred.defer([{ ...run, retryAtMs: T0 + 9_000, deferredAtMs: T0 + 8_000, reason: 'breaker' }], 'worker-a');
      expect(await deferred.get(run.key)).toEqual({ ...run, retryAtMs: T0 + 9_000, reason: 'breaker' });
      expect((await deferred.list({ limit: 10 })).map((r) => r.key)).toEqual([run.key]);
    });

    it("drops the owner's claims on the runs' keys and leaves another owner's claim", async () => {
      const { store, deferred } = await open();
      const mine = deferredRun('h', 's1', '1');
      const theirs = deferredRun('h', 's2', '2');
      await store.claim([mine.key], 'worker-a', 60_000);
      await store.claim([theirs.key], 'worker-b', 60_000);
      await deferred.defer([mine, theirs], 'worker-a');
      expect((await store.claim([mine.key, theirs.key], 'worker-c', 60_000)).states).toEqual(['new', 'busy']);
      // Both are deferred all the same: whoever holds a claim, the run waits in the store.
      expect((await deferred.list({ limit: 10 })).map((r) => r.key).sort()).toEqual([mine.key, theirs.key].sort());
    });

    it("keeps the key's failure history: the run's attempt count survives its deferral", async () => {
      const { store, deferred } = await open();
      const run = deferredRun('h', 's', '1');
      await store.claim([run.key], 'worker-a', 60_000);
      expect(await store.recordFailures([{ key: run.key, failedAtMs: T0 - 2_000, retryAtMs: T0 }], 'worker-a')).toEqual([1]);
      await store.claim([run.key], 'worker-a', 60_000);
      await deferred.defer([run], 'worker-a');
      const claim = await store.claim([run.key], 'worker-b', 60_000);
      expect(claim.states).toEqual(['new']);
      expect(claim.failures?.[0]).toEqual({ failures: 1, retryAtMs: T0, firstFailedAtMs: T0 - 2_000, lastFailedAtMs: T0 - 2_000 });
    });

    it('does not defer a key already done', async () => {
      const { store, deferred } = await open();
      const done = deferredRun('h', 's', '1');
      const open_ = deferredRun('h', 's', '2');
      await store.markDone([done.key]);
      await deferred.defer([done, open_], 'worker-a');
      expect(await deferred.get(done.key)).toBeUndefined();
      expect(keysOf(await deferred.list({ limit: 10 }))).toEqual([open_.key]);
      expect(keysOf(await deferred.due(T0, 10))).toEqual([open_.key]); // the done run is no head
    });

    it('orders a chain by sequence across lengths, and only its head is due', async () => {
      const { deferred } = await open();
      const ten = deferredRun('h', 's', '10', { retryAtMs: T0 - 5_000 });
      const nine = deferredRun('h', 's', '9', { retryAtMs: T0 + 60_000 });
      const hundred = deferredRun('h', 's', '100', { retryAtMs: T0 - 9_000 });
      await deferred.defer([ten, hundred], 'w');
      await deferred.defer([nine], 'w');
      expect(keysOf(await deferred.list({ limit: 10 }))).toEqual(keysOf([nine, ten, hundred]));
      // The head (9) waits until T0 + 60 s: the runs behind it are not due whatever their time.
      expect(await deferred.due(T0, 10)).toEqual([]);
      expect(await deferred.nextDueAtMs()).toBe(T0 + 60_000);
      expect(keysOf(await deferred.due(T0 + 60_000, 10))).toEqual([nine.key]);
    });

    it('answers due heads earliest first, at most limit, leaving out skipped handlers', async () => {
      const { deferred } = await open();
      const a1 = deferredRun('a', 's1', '5', { retryAtMs: T0 - 3_000 });
      const a2 = deferredRun('a', 's2', '6', { retryAtMs: T0 - 1_000 });
      const b1 = deferredRun('b', 's1', '5', { retryAtMs: T0 - 2_000 });
      const late = deferredRun('b', 's3', '8', { retryAtMs: T0 + 1_000 });
      await deferred.defer([a1, a2, b1, late], 'w');
      expect(keysOf(await deferred.due(T0, 10))).toEqual(keysOf([a1, b1, a2]));
      expect(keysOf(await deferred.due(T0, 2))).toEqual(keysOf([a1, b1]));
      expect(keysOf(await deferred.due(T0, 10, new Set(['a'])))).toEqual([b1.key]);
      expect(keysOf(await deferred.due(T0, 1, new Set(['a'])))).toEqual([b1.key]);
      expect(await deferred.due(T0, 10, new Set(['a', 'b']))).toEqual([]);
      expect(await deferred.due(T0 - 10_000, 10)).toEqual([]);
      expect(await deferred.due(T0, 10)).toEqual(await Promise.all(keysOf([a1, b1, a2]).map(async (key) => deferred.get(key))));
    });

    it('promotes the next run of a chain to head when its head is removed, and forgets an empty chain', async () => {
      const { deferred } = await open();
      const first = deferredRun('h', 's', '99', { retryAtMs: T0 + 10_000 });
      const second = deferredRun('h', 's', '100', { retryAtMs: T0 - 1_000, reason: 'chain' });
      const other = deferredRun('h', 'other', '3', { retryAtMs: T0 + 20_000 });
      await deferred.defer([second, first, other], 'w');
      expect(await deferred.chainsWithRuns([first.chain, other.chain, chainOf('h', 'none')])).toEqual(new Set([first.chain, other.chain]));
      expect(await deferred.due(T0, 10)).toEqual([]);
      await deferred.remove([first.key, 'h:not-deferred']);
      expect(keysOf(await deferred.due(T0, 10))).toEqual([second.key]);
      expect(await deferred.nextDueAtMs()).toBe(T0 - 1_000);
      await deferred.remove([second.key, second.key]);
      expect(await deferred.chainsWithRuns([first.chain, other.chain])).toEqual(new Set([other.chain]));
      expect(await deferred.nextDueAtMs()).toBe(T0 + 20_000);
      await deferred.remove([other.key]);
      expect(await deferred.nextDueAtMs()).toBeUndefined();
      expect(await deferred.list({ limit: 10 })).toEqual([]);
      expect(await deferred.stats()).toEqual(new Map());
      await deferred.remove([]);
    });

    it('reschedules a deferred run, head or not, and answers false for a key not deferred', async () => {
      const { deferred } = await open();
      const head = deferredRun('h', 's', '1', { retryAtMs: T0 + 60_000 });
      const behind = deferredRun('h', 's', '2', { retryAtMs: T0 + 60_000 });
      await deferred.defer([head, behind], 'w');
      expect(await deferred.reschedule(behind.key, T0)).toBe(true);
      expect(await deferred.due(T0, 10)).toEqual([]); // still behind its head
      expect(await deferred.reschedule(head.key, T0)).toBe(true);
      expect(await deferred.nextDueAtMs()).toBe(T0);
      expect(await deferred.due(T0, 10)).toEqual([{ ...head, retryAtMs: T0 }]);
      expect(await deferred.reschedule('h:missing', T0)).toBe(false);
      // A later defer of the head moves the chain's due time too.
      await deferred.defer([{ ...head, retryAtMs: T0 + 5_000 }], 'w');
      expect(await deferred.nextDueAtMs()).toBe(T0 + 5_000);
    });

    it('lists in chain order (handler, subject, sequence), of one handler, at most limit', async () => {
      const { deferred } = await open();
      const runs = [
        deferredRun('b', 'x', '3'),
        deferredRun('a', 'y', '12'),
        deferredRun('a', 'x', '20'),
        deferredRun('a-b', 'x', '1'),
        deferredRun('a', 'y', '4'),
        deferredRun('a', 'x', '100'),
      ];
      await deferred.defer(runs, 'w');
      const [b3, a_y12, a_x20, ab1, a_y4, a_x100] = runs as [DeferredRun, DeferredRun, DeferredRun, DeferredRun, DeferredRun, DeferredRun];
      expect(keysOf(await deferred.list({ limit: 100 }))).toEqual(keysOf([a_x20, a_x100, a_y4, a_y12, ab1, b3]));
      expect(keysOf(await deferred.list({ limit: 3 }))).toEqual(keysOf([a_x20, a_x100, a_y4]));
      expect(keysOf(await deferred.list({ handler: 'a', limit: 100 }))).toEqual(keysOf([a_x20, a_x100, a_y4, a_y12]));
      expect(keysOf(await deferred.list({ handler: 'a', limit: 2 }))).toEqual(keysOf([a_x20, a_x100]));
      expect(keysOf(await deferred.list({ handler: 'a-b', limit: 100 }))).toEqual([ab1.key]);
      expect(await deferred.list({ handler: 'c', limit: 100 })).toEqual([]);
      expect(await deferred.list({ limit: 100 })).toEqual([a_x20, a_x100, a_y4, a_y12, ab1, b3]);
    });

    it('counts runs per handler with the oldest deferral time', async () => {
      const { deferred } = await open();
      await deferred.defer(
        [
          deferredRun('a', 's1', '1', { deferredAtMs: T0 - 5_000 }),
          deferredRun('a', 's2', '2', { deferredAtMs: T0 - 7_000 }),
          deferredRun('a', 's2', '3', { deferredAtMs: T0 - 1_000 }),
          deferredRun('b', 's1', '1', { deferredAtMs: T0 - 2_000 }),
        ],
        'w',
      );
      expect(await deferred.stats()).toEqual(
        new Map([
          ['a', { count: 3, oldestDeferredAtMs: T0 - 7_000 }],
          ['b', { count: 1, oldestDeferredAtMs: T0 - 2_000 }],
        ]),
      );
    });

    it('keeps prefixes apart', async () => {
      const first = await open();
      const second = await open();
      const run = deferredRun('h', 's', '1');
      await first.deferred.defer([run], 'w');
      expect(await second.deferred.get(run.key)).toBeUndefined();
      expect(await second.deferred.list({ limit: 10 })).toEqual([]);
      expect(await second.deferred.due(T0, 10)).toEqual([]);
      expect(await second.deferred.nextDueAtMs()).toBeUndefined();
      expect(await second.deferred.chainsWithRuns([run.chain])).toEqual(new Set());
      expect(await second.deferred.stats()).toEqual(new Map());
      expect(await second.deferred.reschedule(run.key, T0)).toBe(false);
      await second.deferred.remove([run.key]);
      expect(await first.deferred.get(run.key)).toEqual(run);
    });

    it('defers 1,000 runs in one call, across 100 chains', async () => {
      const { store, deferred } = await open();
      const runs = Array.from({ length: 1_000 }, (_, i) =>
        deferredRun(`h${i % 2}`, `s${i % 100}`, String(1_000 - i), { retryAtMs: T0 + (i % 7), deferredAtMs: T0 - i }),
      );
      await store.claim(keysOf(runs), 'worker-a', 60_000);
      await deferred.defer(runs, 'worker-a');
      expect((await store.claim(keysOf(runs).slice(0, 3), 'worker-b', 60_000)).states).toEqual(['new', 'new', 'new']);
      expect((await deferred.list({ limit: 2_000 })).length).toBe(1_000);
      const heads = await deferred.due(T0 + 10, 1_000);
      expect(heads).toHaveLength(100);
      // Each chain's head is its lowest sequence: the last run given for it.
      for (const head of heads) {
        const chainRuns = runs.filter((run) => run.chain === head.chain);
        expect(head.key).toBe(chainRuns[chainRuns.length - 1]!.key);
      }
      expect(await deferred.stats()).toEqual(
        new Map([
          ['h0', { count: 500, oldestDeferredAtMs: T0 - 998 }],
          ['h1', { count: 500, oldestDeferredAtMs: T0 - 999 }],
        ]),
      );
      await deferred.remove(keysOf(runs));
      expect(await deferred.nextDueAtMs()).toBeUndefined();
    });
  });
}
