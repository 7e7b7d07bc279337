/**
 * The failure-history part of the idempotency store contract (store-contract.ts runs it for every
 * store): a key's failed runs are counted beside its claim, come back with the next claim, and
 * outlive the claim (its expiry, a release, another owner, a reopened store) until a done mark or
 * the done TTL ends them.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { FailureHistory, IdempotencyStore } from '../idempotency/store.js';

/** The test runner's `it` (vitest, jest and node:test have one of this shape). */
export interface ContractRunner {
  it(name: string, body: () => Promise<void>, timeoutMs?: number): void;
}

export interface FailureContractOptions extends ContractRunner {
  /** Opens a store on `prefix` (kept open until the test ends, unless the test closes it). */
  open(prefix?: string, doneTtlMs?: number): Promise<IdempotencyStore>;
  /** Two instances on one prefix see each other's keys, and a reopened store finds them. */
  shared: boolean;
}

/** Deep equality where a property set to undefined and a missing one are the same (as stores answer either). */
export function same(actual: unknown, expected: unknown, message?: string): void {
  assert.deepStrictEqual(withoutUndefined(actual), withoutUndefined(expected), message);
}

function withoutUndefined(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutUndefined);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => [k, withoutUndefined(v)]),
  );
}

/** Polls `probe` until it returns a value (not undefined or false); fails after `timeoutMs` naming `what`. */
export async function waitUntil<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
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
  const { open, it } = options;

  it('claims of keys without failures allocate no failures array, even when other keys have some', async () => {
    const store = await open();
    const failing = key();
    const fresh = [key(), key(), key()];
    same(await store.claim(fresh, 'worker-a', 30_000), { states: ['new', 'new', 'new'], failures: undefined });
    await store.claim([failing], 'worker-a', 30_000);
    same(await store.recordFailures([{ key: failing, failedAtMs: T0, retryAtMs: T0 + 1_000 }], 'worker-a'), [1]);
    const again = await store.claim([...fresh, key()], 'worker-a', 30_000);
    same(again.states, ['new', 'new', 'new', 'new']);
    assert.equal(again.failures, undefined);
    same(await store.recordFailures([], 'worker-a'), []);
  });

  it('counts failures per key and returns them with the next claim, by position, the claim moving on', async () => {
    const store = await open();
    const [a, b, c] = [key(), key(), key()];
    await store.claim([a, b, c], 'worker-a', 30_000);
    same(await store.recordFailures([{ key: a, failedAtMs: T0, retryAtMs: T0 + 1_000 }], 'worker-a'), [1]);

    // A's claim on `a` went with the failure; b and c are still A's.
    const second = await store.claim([b, a, c], 'worker-b', 30_000);
    same(second.states, ['busy', 'new', 'busy']);
    assert.equal(second.failures?.length, 3);
    assert.equal(second.failures?.[0], undefined);
    same(second.failures?.[1], { failures: 1, retryAtMs: T0 + 1_000, firstFailedAtMs: T0, lastFailedAtMs: T0 });
    assert.equal(second.failures?.[2], undefined);

    // B fails `a` again, and also `b`, which A still holds: both count (the runs happened); A keeps `b`.
    same(
      await store.recordFailures(
        [
          { key: a, failedAtMs: T0 + 5_000, retryAtMs: T0 + 7_000 },
          { key: b, failedAtMs: T0 + 5_000, retryAtMs: T0 + 6_000 },
        ],
        'worker-b',
      ),
      [2, 1],
    );
    const third = await store.claim([a, b], 'worker-c', 30_000);
    same(third.states, ['new', 'busy']);
    same(third.failures?.[0], { failures: 2, retryAtMs: T0 + 7_000, firstFailedAtMs: T0, lastFailedAtMs: T0 + 5_000 });
    // A history may come back for a busy key too; when it does, it is that key's.
    const busyHistory = third.failures?.[1];
    if (busyHistory !== undefined) assert.equal(busyHistory.failures, 1);
    same((await store.claim([b], 'worker-a', 30_000)).failures?.[0], {
      failures: 1,
      retryAtMs: T0 + 6_000,
      firstFailedAtMs: T0 + 5_000,
      lastFailedAtMs: T0 + 5_000,
    });
  });

  it('finds histories by position in a batch of thousands of keys, and a done mark of them all wipes them', async () => {
    const store = await open();
    const batch = Array.from({ length: 2_500 }, key);
    const failing = [0, 1_500, 2_499];
    await store.claim(batch, 'worker-a', 30_000);
    await store.recordFailures(
      failing.map((i) => ({ key: batch[i] as string, failedAtMs: T0 + i, retryAtMs: T0 + i })),
      'worker-a',
    );
    const { failures } = await store.claim(batch, 'worker-a', 30_000);
    const found = (failures ?? []).flatMap((history, i) => (history === undefined ? [] : [[i, history.lastFailedAtMs - T0]]));
    same(
      found,
      failing.map((i) => [i, i]),
    );
    await store.markDone(batch);
    assert.equal((await store.claim(batch, 'worker-b', 30_000)).failures, undefined);
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
    assert.equal((await store.claim([released], 'worker-a', 30_000)).failures?.[0]?.failures, 1);
    await store.release([released], 'worker-a');
    assert.equal((await store.claim([released], 'worker-b', 30_000)).failures?.[0]?.failures, 1);

    same((await store.claim([expiring], 'worker-a', 300)).states, ['new']);
    const taken = await waitUntil(
      'the short claim to expire and be taken over',
      async () => {
        const result = await store.claim([expiring], 'worker-b', 30_000);
        return result.states[0] === 'new' ? result : undefined;
      },
      10_000,
    );
    same(taken.failures?.[0], { failures: 1, retryAtMs: T0, firstFailedAtMs: T0, lastFailedAtMs: T0 });
    same(await store.recordFailures([{ key: expiring, failedAtMs: T0 + 1, retryAtMs: T0 + 2 }], 'worker-b'), [2]);
  });

  it('a done mark wipes the history, and a failure recorded after it leaves the key done', async () => {
    const store = await open();
    const [k, other] = [key(), key()];
    await store.claim([k, other], 'worker-a', 30_000);
    await store.recordFailures([{ key: k, failedAtMs: T0, retryAtMs: T0 }], 'worker-a');
    await store.claim([k], 'worker-a', 30_000);
    await store.markDone([k]);
    same(await store.claim([k, other], 'worker-b', 30_000), { states: ['done', 'busy'], failures: undefined });
    // A late report of a run that failed elsewhere: the effect is recorded, nothing changes.
    same(
      await store.recordFailures(
        [
          { key: k, failedAtMs: T0, retryAtMs: T0 },
          { key: other, failedAtMs: T0, retryAtMs: T0 },
        ],
        'worker-a',
      ),
      [0, 1],
    );
    same(await store.claim([k], 'worker-b', 30_000), { states: ['done'], failures: undefined });
  });

  it('forgets the history after the done TTL from its last failure', async () => {
    const store = await open(undefined, 1_500);
    const k = key();
    await store.claim([k], 'worker-a', 30_000);
    await store.recordFailures([{ key: k, failedAtMs: T0, retryAtMs: T0 }], 'worker-a');
    assert.equal((await store.claim([k], 'worker-a', 30_000)).failures?.[0]?.failures, 1);
    await waitUntil('the history to expire', async () => (await store.claim([k], 'worker-a', 30_000)).failures === undefined, 10_000);
    // Counting starts over.
    same(await store.recordFailures([{ key: k, failedAtMs: T0 + 9, retryAtMs: T0 + 9 }], 'worker-a'), [1]);
    same((await store.claim([k], 'worker-a', 30_000)).failures?.[0], { failures: 1, retryAtMs: T0 + 9, firstFailedAtMs: T0 + 9, lastFailedAtMs: T0 + 9 });
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
    same(
      counts.map(([count]) => count).sort((x, y) => (x ?? 0) - (y ?? 0)),
      Array.from({ length: runs }, (_, i) => i + 1),
    );
    const history = await historyOf(second, [k], 'worker-c');
    assert.equal(history?.failures, runs);
    assert.ok((history?.firstFailedAtMs ?? Number.POSITIVE_INFINITY) <= T0 + 1);
  });

  if (options.shared) {
    it('keeps the history when the store is closed and opened again', async () => {
      const prefix = `test-${randomUUID()}`;
      const first = await open(prefix);
      const k = key();
      await first.claim([k], 'worker-a', 30_000);
      await first.recordFailures([{ key: k, failedAtMs: T0, retryAtMs: T0 + 60_000 }], 'worker-a');
      await first.close();
      const reopened = await open(prefix);
      same(await reopened.claim([k], 'worker-b', 30_000), {
        states: ['new'],
        failures: [{ failures: 1, retryAtMs: T0 + 60_000, firstFailedAtMs: T0, lastFailedAtMs: T0 }],
      });
    });
  }
}
