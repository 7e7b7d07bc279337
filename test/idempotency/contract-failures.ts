/**
 * The failure-history part of the idempotency store contract (contract.ts runs it for every
 * adapter): a key's failed runs are counted beside its claim, come back with the next claim, and
 * outlive the claim (its expiry, a release, another owner, a reopened store) until a done mark or
 * the done TTL ends them.
 */
import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import type { FailureHistory, IdempotencyStore } from '../../src/idempotency/store.js';
import { waitFor } from '../fixtures/wait-for.js';

export interface FailureContractOptions {
  /** Opens a store on `prefix` (kept open until the test ends, unless the test closes it). */
  open(prefix?: string, doneTtlMs?: number): Promise<IdempotencyStore>;
  /** Two instances on one prefix see each other's keys, and a reopened store finds them. */
  shared: boolean;
}

const T0 = Date.parse('2026-11-28T00:00:00Z');

function key(): string {
  return `orders/created:evt-${randomUUID()}`;
}

/** The history a claim by `owner` returns at `position` (undefined when it returned none). */
async function historyOf(store: IdempotencyStore, keys: string[], owner: string, position = 0): Promise<FailureHistory | undefined> {
  const { failures } = await store.claim(keys, owner, 30_000);
  return failures?.[position];
}

export function failureContract(options: FailureContractOptions): void {
  const { open } = options;

  it('claims of keys without failures allocate no failures array, even when other keys have some', async () => {
    const store = await open();
    const failing = key();
    const fresh = [key(), key(), key()];
    expect(await store.claim(fresh, 'worker-a', 30_000)).toEqual({ states: ['new', 'new', 'new'], failures: undefined });
    await store.claim([failing], 'worker-a', 30_000);
    expect(await store.recordFailures([{ key: failing, failedAtMs: T0, retryAtMs: T0 + 1_000 }], 'worker-a')).toEqual([1]);
    const again = await store.claim([...fresh, key()], 'worker-a', 30_000);
    expect(again.states).toEqual(['new', 'new', 'new', 'new']);
    expect(again.failures).toBeUndefined();
    expect(await store.recordFailures([], 'worker-a')).toEqual([]);
  });

  it('counts failures per key and returns them with the next claim, by position, the claim moving on', async () => {
    const store = await open();
    const [a, b, c] = [key(), key(), key()];
    await store.claim([a, b, c], 'worker-a', 30_000);
    expect(await store.recordFailures([{ key: a, failedAtMs: T0, retryAtMs: T0 + 1_000 }], 'worker-a')).toEqual([1]);

    // A's claim on `a` went with the failure; b and c are still A's.
    const second = await store.claim([b, a, c], 'worker-b', 30_000);
    expect(second.states).toEqual(['busy', 'new', 'busy']);
    expect(second.failures).toHaveLength(3);
    expect(second.failures?.[0]).toBeUndefined();
    expect(second.failures?.[1]).toEqual({ failures: 1, retryAtMs: T0 + 1_000, firstFailedAtMs: T0, lastFailedAtMs: T0 });
    expect(second.failures?.[2]).toBeUndefined();

    // B fails `a` again, and also `b`, which A still holds: both count (the runs happened); A keeps `b`.
    expect(
      await store.recordFailures(
        [
          { key: a, failedAtMs: T0 + 5_000, retryAtMs: T0 + 7_000 },
          { key: b, failedAtMs: T0 + 5_000, retryAtMs: T0 + 6_000 },
        ],
        'worker-b',
      ),
    ).toEqual([2, 1]);
    const third = await store.claim([a, b], 'worker-c', 30_000);
    expect(third.states).toEqual(['new', 'busy']);
    expect(third.failures?.[0]).toEqual({ failures: 2, retryAtMs: T0 + 7_000, firstFailedAtMs: T0, lastFailedAtMs: T0 + 5_000 });
    // A history may come back for a busy key too; when it does, it is that key's.
    const busyHistory = third.failures?.[1];
    if (busyHistory !== undefined) expect(busyHistory.failures).toBe(1);
    expect((await store.claim([b], 'worker-a', 30_000)).failures?.[0]).toEqual({ failures: 1, retryAtMs: T0 + 6_000, firstFailedAtMs: T0 + 5_000, lastFailedAtMs: T0 + 5_000 });
  });

  it('finds histories by position in a batch of thousands of keys, and a done mark of them all wipes them', async () => {
    const store = await open();
    const batch = Array.from({ length: 2_500 }, key);
    const failing = [0, 1_500, 2_499];
    await store.claim(batch, 'worker-a', 30_000);
    await store.recordFailures(failing.map((i) => ({ key: batch[i] as string, failedAtMs: T0 + i, retryAtMs: T0 + i })), 'worker-a');
    const { failures } = await store.claim(batch, 'worker-a', 30_000);
    const found = (failures ?? []).flatMap((history, i) => (history === undefined ? [] : [[i, history.lastFailedAtMs - T0]]));
    expect(found).toEqual(failing.map((i) => [i, i]));
    await store.markDone(batch);
    expect((await store.claim(batch, 'worker-b', 30_000)).failures).toBeUndefined();
  });

  it('keeps the history through a release and after the claim expired', async () => {
    const store = await open();
    const [released, expiring] = [key(), key()];
    await store.claim([released, expiring], 'worker-a', 30_000);
    await store.recordFailures(
      [
        { key: released, failedAtMs: T0, retryAtMs: T0 },
        { key: expiring, failedAtMs: T0, retryAtMs: T0 },
      ],
      'worker-a',
    );
    expect((await store.claim([released], 'worker-a', 30_000)).failures?.[0]?.failures).toBe(1);
    await store.release([released], 'worker-a');
    expect((await store.claim([released], 'worker-b', 30_000)).failures?.[0]?.failures).toBe(1);

    expect((await store.claim([expiring], 'worker-a', 300)).states).toEqual(['new']);
    const taken = await waitFor('the short claim to expire and be taken over', async () => {
      const result = await store.claim([expiring], 'worker-b', 30_000);
      return result.states[0] === 'new' ? result : undefined;
    }, 10_000);
    expect(taken.failures?.[0]).toEqual({ failures: 1, retryAtMs: T0, firstFailedAtMs: T0, lastFailedAtMs: T0 });
    expect(await store.recordFailures([{ key: expiring, failedAtMs: T0 + 1, retryAtMs: T0 + 2 }], 'worker-b')).toEqual([2]);
  });

  it('a done mark wipes the history, and a failure recorded after it leaves the key done', async () => {
    const store = await open();
    const [k, other] = [key(), key()];
    await store.claim([k, other], 'worker-a', 30_000);
    await store.recordFailures([{ key: k, failedAtMs: T0, retryAtMs: T0 }], 'worker-a');
    await store.claim([k], 'worker-a', 30_000);
    await store.markDone([k]);
    expect(await store.claim([k, other], 'worker-b', 30_000)).toEqual({ states: ['done', 'busy'], failures: undefined });
    // A late report of a run that failed elsewhere: the effect is recorded, nothing changes.
    expect(await store.recordFailures([{ key: k, failedAtMs: T0, retryAtMs: T0 }, { key: other, failedAtMs: T0, retryAtMs: T0 }], 'worker-a')).toEqual([0, 1]);
    expect(await store.claim([k], 'worker-b', 30_000)).toEqual({ states: ['done'], failures: undefined });
  });

  it('forgets the history after the done TTL from its last failure', async () => {
    const store = await open(undefined, 1_500);
    const k = key();
    await store.claim([k], 'worker-a', 30_000);
    await store.recordFailures([{ key: k, failedAtMs: T0, retryAtMs: T0 }], 'worker-a');
    expect((await store.claim([k], 'worker-a', 30_000)).failures?.[0]?.failures).toBe(1);
    await waitFor('the history to expire', async () => (await store.claim([k], 'worker-a', 30_000)).failures === undefined, 10_000);
    // Counting starts over.
    expect(await store.recordFailures([{ key: k, failedAtMs: T0 + 9, retryAtMs: T0 + 9 }], 'worker-a')).toEqual([1]);
    expect((await store.claim([k], 'worker-a', 30_000)).failures?.[0]).toEqual({ failures: 1, retryAtMs: T0 + 9, firstFailedAtMs: T0 + 9, lastFailedAtMs: T0 + 9 });
  });

  it('counts every one of concurrent failures of one key from two owners (no lost update)', async () => {
    const prefix = `test-${randomUUID()}`;
    const first = await open(prefix);
    const second = options.shared ? await open(prefix) : first;
    const k = key();
    const runs = 12;
    const counts = await Promise.all(
      Array.from({ length: runs }, (_, i) =>
        (i % 2 === 0 ? first : second).recordFailures([{ key: k, failedAtMs: T0 + i, retryAtMs: T0 + i }], i % 2 === 0 ? 'worker-a' : 'worker-b'),
      ),
    );
    // Each call saw its own increment: every count from 1 to `runs` exactly once.
    expect(counts.map(([count]) => count).sort((x, y) => (x ?? 0) - (y ?? 0))).toEqual(Array.from({ length: runs }, (_, i) => i + 1));
    const history = await historyOf(second, [k], 'worker-c');
    expect(history?.failures).toBe(runs);
    expect(history?.firstFailedAtMs).toBeLessThanOrEqual(T0 + 1);
  });

  it.runIf(options.shared)('keeps the history when the store is closed and opened again', async () => {
    const prefix = `test-${randomUUID()}`;
    const first = await open(prefix);
    const k = key();
    await first.claim([k], 'worker-a', 30_000);
    await first.recordFailures([{ key: k, failedAtMs: T0, retryAtMs: T0 + 60_000 }], 'worker-a');
    await first.close();
    const reopened = await open(prefix);
    expect(await reopened.claim([k], 'worker-b', 30_000)).toEqual({
      states: ['new'],
      failures: [{ failures: 1, retryAtMs: T0 + 60_000, firstFailedAtMs: T0, lastFailedAtMs: T0 }],
    });
  });
}
