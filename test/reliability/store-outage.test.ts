import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { startWorker } from '../../src/worker/start.js';
import type { RunningWorker } from '../../src/worker/running-worker.js';
import { underCi } from '../fixtures/ci.js';
import { startTcpProxy, type TcpProxy } from '../fixtures/tcp-proxy.js';
import {
  appendBehave,
  createConsumer,
  deadLetters,
  emulatorForFile,
  records,
  silent,
  tempDir,
  untilCommitted,
  waitFor,
  workerConfig,
} from '../worker/harness.js';

/**
 * A shared idempotency store that becomes unreachable for 10 s in the middle of a run (a TCP proxy
 * between the worker and the server, cut then restored): no event may be dead-lettered or lost, and
 * the worker must wait for the store instead of pulling and requeueing leases it cannot claim. A
 * failing store backs the whole process off as a failing platform does: one exponential back-off
 * (the default pull timings: 200 ms doubling up to 30 s, with jitter), then one probe at a time.
 */
const STORES = [
  { name: 'redis', variable: 'REDIS_URL', url: process.env.REDIS_URL },
  { name: 'postgres', variable: 'DATABASE_URL', url: process.env.DATABASE_URL },
] as const;

const EVENTS = 800;
const WORKERS = 2;
const OUTAGE_MS = 10_000;
/**
 * Pulls sent while the store is cut, at most. Back-off delays of 200 ms doubling, even if jitter
 * halved each of them, add up past 10 s only after 7 probes (100 + 200 + ... + 3,200 = 6,300 ms; the
 * 7th waits 6,400 ms more at least... so at most 7 probes start in the window); each of the two
 * workers may also have sent one or two pulls before the first failing claim came back. 7 + 2 x 2 =
 * 11, and one more for a probe that straddles the restore.
 */
const MAX_PULLS_DURING_OUTAGE = 12;

describe('store outage test environment', () => {
  for (const store of STORES) {
    it.runIf(underCi())(`has ${store.variable} in CI`, () => {
      expect(store.url, `${store.variable} must be set in CI (eval "$(bash .ci/services.sh)")`).toBeTruthy();
    });
    if (store.url === undefined) console.warn(`[reliability] ${store.name} store outage test skipped: ${store.variable} is not set`);
  }
});

describe('a 10 s outage of the shared idempotency store', () => {
  const t = emulatorForFile();
  const proxies: TcpProxy[] = [];
  afterEach(async () => {
    await Promise.all(proxies.splice(0).map((proxy) => proxy.close()));
  });

  for (const store of STORES) {
    it.skipIf(store.url === undefined)(
      `${store.name}: 0 dead letters, 0 lost, pulls during the outage bounded by the back-off`,
      async () => {
        const serverUrl = new URL(store.url as string);
        const proxy = await startTcpProxy({ host: serverUrl.hostname, port: Number(serverUrl.port || (store.name === 'redis' ? 6379 : 5432)) });
        proxies.push(proxy);
        const dir = tempDir(`store-outage-${store.name}`);
        const record = join(dir, 'effects.log');
        const destination = await createConsumer(t.emulator, `store-outage-${store.name}`);
        const appended = appendBehave(
          t.emulator,
          EVENTS,
          () => ({ behaviour: 'sleep', sleepMs: 5, record }),
          (i) => `s-${i % 50}`,
        );

        const config = workerConfig(t.emulator, destination, dir, {
          workers: WORKERS,
          limit: 20,
          concurrency: 4,
          visibilitySeconds: 30,
          idempotencyUrl: proxy.urlThrough(store.url as string),
          idempotencyPrefix: `store-outage-${randomUUID()}`,
        });
        // Default error timings (the back-off under test); only the idle wait is short, so the run ends quickly.
        const worker: RunningWorker = await startWorker(config, { logger: silent, timings: { idleMinMs: 20, idleMaxMs: 100 } });
        t.running.push(worker);
        const pullsSentAt: number[] = [];
        let requeued = 0;
        worker.events.on('pull:done', (e) => pullsSentAt.push(Date.now() - e.durationMs));
        worker.events.on('ack:done', (e) => {
          if (e.sent === 'failed') requeued++;
        });

        const startedAtMs = Date.now();
        await waitFor('a quarter of the events to be handled', () => records(record).length >= EVENTS / 4, 20_000);
        const cutAtMs = Date.now();
        proxy.cut();
        const requeuedBefore = requeued;
        // The outage itself: the scenario lasts this long (nothing is being waited for).
        await sleep(OUTAGE_MS);
        proxy.restore();
        const restoredAtMs = Date.now();
        const pullsDuringOutage = pullsSentAt.filter((at) => at >= cutAtMs && at < restoredAtMs).length;
        const requeuedDuringOutage = requeued - requeuedBefore;

        await untilCommitted(t.emulator, destination, 40_000);
        const committedAtMs = Date.now();
        const handled = new Set(records(record).map((line) => line.eventId));
        const lost = appended.filter((event) => !handled.has(event.id));
        console.info(
          `[reliability] ${store.name} outage: ${pullsDuringOutage} pulls and ${requeuedDuringOutage} failed acks in ${OUTAGE_MS} ms;` +
            ` cut after ${cutAtMs - startedAtMs} ms, committed ${committedAtMs - restoredAtMs} ms after the restore`,
        );

        expect(deadLetters(join(dir, 'dead-letter.jsonl'))).toEqual([]);
        expect(lost.map((event) => event.id)).toEqual([]);
        expect(pullsDuringOutage, `pulls sent during the ${OUTAGE_MS} ms outage (${requeuedDuringOutage} failed acks)`).toBeLessThanOrEqual(
          MAX_PULLS_DURING_OUTAGE,
        );
      },
      90_000,
    );
  }

  for (const store of STORES) {
    it.skipIf(store.url === undefined)(
      `${store.name}: a claim whose reply was lost in a cut idles nothing: progress within 5 s of the return`,
      async () => {
        const serverUrl = new URL(store.url as string);
        const proxy = await startTcpProxy({ host: serverUrl.hostname, port: Number(serverUrl.port || (store.name === 'redis' ? 6379 : 5432)) });
        proxies.push(proxy);
        const dir = tempDir(`store-lost-reply-${store.name}`);
        const record = join(dir, 'effects.log');
        const destination = await createConsumer(t.emulator, `store-lost-reply-${store.name}`);
        const appended = appendBehave(
          t.emulator,
          300,
          () => ({ behaviour: 'sleep', sleepMs: 5, record }),
          (i) => `s-${i}`,
        );
        // Claims last a whole lease (60 s): a claim nobody gives back would hold its key that long.
        const config = workerConfig(t.emulator, destination, dir, {
          limit: 20,
          concurrency: 4,
          visibilitySeconds: 60,
          idempotencyUrl: proxy.urlThrough(store.url as string),
          idempotencyPrefix: `store-lost-reply-${randomUUID()}`,
        });
        const worker: RunningWorker = await startWorker(config, { logger: silent, timings: { idleMinMs: 20, idleMaxMs: 100 } });
        t.running.push(worker);
        let claimsFailed = 0;
        await waitFor('the first events handled', () => records(record).length >= 40, 20_000);
        // The claims sent now reach the server and take their keys; their answers never come back.
        const seenBefore = records(record).length;
        proxy.dropReplies();
        await waitFor(
          'no effect for a while (every call waits for a lost answer)',
          async () => {
            const before = records(record).length;
            await sleep(300);
            return records(record).length === before;
          },
          10_000,
        );
        proxy.cut();
        await sleep(2_000);
        proxy.restore();
        const restoredAtMs = Date.now();
        const countAtRestore = records(record).length;
        await waitFor('an effect after the return', () => records(record).length > countAtRestore, 20_000);
        const progressAfterMs = Date.now() - restoredAtMs;
        await untilCommitted(t.emulator, destination, 40_000);
        const doneAfterMs = Date.now() - restoredAtMs;
        claimsFailed = countAtRestore - seenBefore;
        console.info(
          `[reliability] ${store.name} lost claim reply: first effect ${progressAfterMs} ms after the return, committed after ${doneAfterMs} ms (${claimsFailed} effects while replies were dropped)`,
        );
        const handled = new Set(records(record).map((line) => line.eventId));
        expect(appended.filter((event) => !handled.has(event.id)).map((e) => e.id)).toEqual([]);
        expect(deadLetters(join(dir, 'dead-letter.jsonl'))).toEqual([]);
        expect(progressAfterMs).toBeLessThanOrEqual(5_000);
        // Far sooner than the lost claims would have expired on their own (a lease, 60 s).
        expect(doneAfterMs).toBeLessThan(30_000);
      },
      90_000,
    );
  }
});
