import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import type { LimitCheck, PermitAnswer, PermitStore } from '../../src/idempotency/permits.js';

/** Opens the permits of a prefix as one process would (a second call: another replica's view). */
export type OpenPermits = (prefix: string) => Promise<{ permits: PermitStore; close: () => Promise<void> }>;

const granted = (answers: PermitAnswer[]) => answers.filter((a) => a.granted).length;

/**
 * The claims every permit store makes (permits.ts): a window never holds more than max starts, a
 * concurrency limit never more than max unexpired permits, an ask is granted in all its checks or
 * in none, and (for the shared stores) two processes on one prefix share the limits. Real time,
 * short windows: the server's clock decides in the shared stores.
 */
export function permitContract(name: string, open: OpenPermits): void {
  describe(`${name} permits`, () => {
    const opened: { close: () => Promise<void> }[] = [];
    const openTwo = async () => {
      const prefix = `test-${randomUUID()}`;
      const a = await open(prefix);
      const b = await open(prefix);
      opened.push(a, b);
      return [a.permits, b.permits] as const;
    };
    afterAll(async () => {
      for (const o of opened) await o.close();
    });

    it('a rate grants max starts in its window, says how long until the next, and grants it then', async () => {
      const [permits] = await openTwo();
      const rate: LimitCheck = { kind: 'rate', id: 'h', max: 5, perMs: 400 };
      const answers = await permits.take(Array.from({ length: 8 }, () => ({ checks: [rate], ttlMs: 1_000 })));
      expect(answers.map((a) => a.granted)).toEqual([true, true, true, true, true, false, false, false]);
      const refused = answers[5] as Extract<PermitAnswer, { granted: false }>;
      expect(refused.refusedBy).toBe('rate');
      expect(refused.waitMs).toBeGreaterThan(0);
      expect(refused.waitMs).toBeLessThanOrEqual(400);
      await sleep(refused.waitMs + 5);
      expect(granted(await permits.take([{ checks: [rate], ttlMs: 1_000 }]))).toBe(1);
    });

    it('two processes asking at once share one window: never more than max granted', async () => {
      const [a, b] = await openTwo();
      const rate: LimitCheck = { kind: 'rate', id: 'shared', max: 6, perMs: 10_000 };
      const one = () => ({ checks: [rate], ttlMs: 1_000 });
      const answers = await Promise.all([...Array.from({ length: 10 }, () => a.take([one()])), ...Array.from({ length: 10 }, () => b.take([one()]))]);
      expect(granted(answers.flat())).toBe(6);
    });

    it('concurrency: max permits at once, a release frees one, an unreleased permit expires at its ttl', async () => {
      const [a, b] = await openTwo();
      const limit: LimitCheck = { kind: 'concurrency', id: 'db', max: 2 };
      const [first, second] = await a.take([
        { checks: [limit], ttlMs: 60_000 },
        { checks: [limit], ttlMs: 300 },
      ]);
      expect(first?.granted && second?.granted).toBe(true);
      const [refused] = await b.take([{ checks: [limit], ttlMs: 60_000 }]);
      expect(refused).toMatchObject({ granted: false, refusedBy: 'concurrency' });
      if (first?.granted !== true) throw new Error('unreachable');
      await a.release(first.token, [limit]);
      await a.release(first.token, [limit]); // idempotent
      const [afterRelease, full] = await b.take([
        { checks: [limit], ttlMs: 60_000 },
        { checks: [limit], ttlMs: 60_000 },
      ]);
      expect([afterRelease?.granted, full?.granted]).toEqual([true, false]);
      // The 300 ms permit was never released (its process died): it comes back when it expires.
      await sleep(320);
      expect(granted(await b.take([{ checks: [limit], ttlMs: 60_000 }]))).toBe(1);
    });

    it('an ask is granted in every check or in none: a refused key spends nothing of the handler rate', async () => {
      const [permits] = await openTwo();
      const handlerRate: LimitCheck = { kind: 'rate', id: 'h', max: 3, perMs: 10_000 };
      const key = (k: string): LimitCheck => ({ kind: 'concurrency', id: JSON.stringify(['h', k]), max: 1 });
      const answers = await permits.take(['a', 'a', 'a', 'b', 'c', 'd'].map((k) => ({ checks: [handlerRate, key(k)], ttlMs: 60_000 })));
      expect(answers.map((a) => a.granted)).toEqual([true, false, false, true, true, false]);
      expect(answers.map((a) => (a.granted ? 'ok' : a.refusedBy))).toEqual(['ok', 'concurrency', 'concurrency', 'ok', 'ok', 'rate']);
    });

    it('prefixes do not share limits', async () => {
      const [a] = await openTwo();
      const [other] = await openTwo();
      const rate: LimitCheck = { kind: 'rate', id: 'h', max: 1, perMs: 10_000 };
      expect(granted(await a.take([{ checks: [rate], ttlMs: 1_000 }]))).toBe(1);
      expect(granted(await other.take([{ checks: [rate], ttlMs: 1_000 }]))).toBe(1);
    });
  });
}
