import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type PlatformClient } from '../../src/client/index.js';
import type { ConsumerApi } from '../../src/client/consumer-api.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import type { PullStatusLabel } from '../../src/worker/events.js';
import { startWorker, type RunningWorker } from '../../src/worker/start.js';
import { tokenFor } from '../emulator/helpers.js';
import { appendBehave, consumerState, createConsumer, records, silent, tempDir, waitFor, workerConfig } from '../worker/harness.js';

/**
 * Backpressure with the worker's real (default) loop timings: with the in-flight window full (429
 * with Retry-After) and with the consumer paused (409) the worker's pull rate stays bounded, and no
 * ack is dropped: every event takes effect once and the cursor reaches the head.
 */
let emulator: RunningEmulator;
let auth: Record<string, string>;
const running: RunningWorker[] = [];

beforeAll(async () => {
  emulator = await startEmulator({ port: 0 });
  auth = { authorization: `Bearer ${(await tokenFor(emulator.url)).body.access_token}` };
});
afterEach(async () => {
  emulator.faults.clear();
  await Promise.all(running.splice(0).map((w) => w.close()));
  await Promise.all(clients.splice(0).map((c) => c.close()));
});
afterAll(async () => {
  await emulator?.close();
});

interface Tally {
  pulls: Array<{ at: number; status: PullStatusLabel }>;
  acks: string[];
}

const clients: PlatformClient[] = [];

/**
 * The real platform client, wrapped to record every pull (with its answer) from the worker's first
 * request on, and every ack answer.
 */
function countingClient(t: Tally): ConsumerApi {
  const client = createClient({ baseUrl: emulator.url, tenant: 'dev-tenant', clientId: 'dev-client', clientSecret: 'dev-secret' });
  clients.push(client);
  return {
    ensureCredential: (signal) => client.ensureCredential(signal),
    async pull(id, params, signal) {
      try {
        const result = await client.pull(id, params, signal);
        t.pulls.push({ at: Date.now(), status: String(result.status) as PullStatusLabel });
        return result;
      } catch (err) {
        t.pulls.push({ at: Date.now(), status: 'error' });
        throw err;
      }
    },
    async acknowledge(id, ack, signal) {
      try {
        const response = await client.acknowledge(id, ack, signal);
        t.acks.push(response.status);
        return response;
      } catch (err) {
        t.acks.push('error');
        throw err;
      }
    },
  };
}

async function start(config: Parameters<typeof startWorker>[0]): Promise<{ worker: RunningWorker; t: Tally }> {
  const t: Tally = { pulls: [], acks: [] };
  const worker = await startWorker(config, { logger: silent, client: countingClient(t) });
  running.push(worker);
  return { worker, t };
}

/** Pulls of `status` per second per pull loop within [fromMs, toMs]. */
function ratePerLoop(t: Tally, status: PullStatusLabel, fromMs: number, toMs: number, loops: number): number {
  const n = t.pulls.filter((p) => p.status === status && p.at >= fromMs && p.at <= toMs).length;
  return n / ((toMs - fromMs) / 1000) / loops;
}

async function rawPull(destination: string, query: string): Promise<number> {
  const res = await fetch(`${emulator.url}/v1/event-destinations/${destination}/pull?${query}`, { method: 'POST', headers: auth });
  await res.arrayBuffer();
  return res.status;
}

describe('backpressure (default loop timings)', () => {
  it('in-flight window full (429): about one pull per Retry-After per loop, then every event once', async () => {
    const dir = tempDir('bp-429');
    const record = join(dir, 'effects.log');
    const destination = await createConsumer(emulator, 'bp-429');
    appendBehave(emulator, 1_200, () => ({ record }), (i) => `s-${i % 100}`);
    // Other consumers' workers hold the whole window (spec: 1,000 leased events) for 4 s, never acking.
    for (let i = 0; i < 10; i++) expect(await rawPull(destination, `limit=100&visibility=4&workerId=hog-${i}`)).toBe(200);
    const loops = 2;
    const startedAt = Date.now();
    const { worker, t } = await start(workerConfig(emulator, destination, dir, { workers: loops, limit: 100, visibilitySeconds: 10, exitWhenIdle: true }));
    expect(await worker.done).toEqual({ reason: 'idle' });
    const firstOk = t.pulls.find((p) => p.status === '200')?.at ?? Date.now();
    const throttled = t.pulls.filter((p) => p.status === '429').length;
    const rate = ratePerLoop(t, '429', startedAt, firstOk, loops);
    console.info(`429 phase: ${throttled} throttled pulls in ${firstOk - startedAt} ms by ${loops} loops = ${rate.toFixed(2)} pulls/s per loop`);
    expect(throttled).toBeGreaterThan(0);
    // Retry-After is at least 1 s (spec), so a loop that honours it pulls at most once a second.
    expect(rate).toBeLessThanOrEqual(1.2);
    const lines = records(record);
    expect(new Set(lines.map((l) => l.eventId)).size).toBe(1_200);
    expect(lines.length).toBe(1_200);
    expect(t.acks.filter((s) => s === 'error' || s === 'stale')).toEqual([]);
    const state = consumerState(emulator, destination);
    expect(state.committed).toBe(state.head);
  }, 60_000);

  it('injected 429 bursts with Retry-After: 1 keep the pull rate near one per second per loop', async () => {
    const dir = tempDir('bp-burst');
    const destination = await createConsumer(emulator, 'bp-burst');
    const loops = 4;
    emulator.faults.set({ throttle: { rate: 1, burst: 10_000, retryAfterSeconds: 1 }, routes: ['pull'] });
    const from = Date.now();
    const { t } = await start(workerConfig(emulator, destination, dir, { workers: loops }));
    await waitFor('3 s of throttling', () => Date.now() - from >= 3_000 && t.pulls.length > 0, 10_000);
    const rate = ratePerLoop(t, '429', from, Date.now(), loops);
    console.info(`injected 429: ${t.pulls.length} pulls in ${Date.now() - from} ms by ${loops} loops = ${rate.toFixed(2)} pulls/s per loop`);
    expect(rate).toBeGreaterThan(0);
    expect(rate).toBeLessThanOrEqual(1.5);
  }, 30_000);

  it('paused (409): the batch in hand is still acked, pulls wait about 2 s, resume finishes every event', async () => {
    const dir = tempDir('bp-409');
    const record = join(dir, 'effects.log');
    const destination = await createConsumer(emulator, 'bp-409');
    appendBehave(emulator, 300, () => ({ behaviour: 'sleep', sleepMs: 300, record }), (i) => `s-${i % 50}`);
    const loops = 2;
    const { worker, t } = await start(workerConfig(emulator, destination, dir, { workers: loops, limit: 50, concurrency: 50, visibilitySeconds: 10, exitWhenIdle: true }));
    // Pause while the first batches are being handled: their acks come after the pause.
    await waitFor('a batch in hand', () => t.pulls.some((p) => p.status === '200'));
    const pauseRes = await fetch(`${emulator.url}/v1/event-destinations/${destination}/pause`, { method: 'POST', headers: auth });
    expect(pauseRes.status).toBe(200);
    const pausedAt = Date.now();
    const acksBefore = t.acks.length;
    await waitFor('the batches in hand acked while paused', () => t.acks.length > acksBefore && t.acks.length >= t.pulls.filter((p) => p.status === '200').length);
    await waitFor('5 s paused', () => Date.now() - pausedAt >= 5_000, 10_000);
    const rate = ratePerLoop(t, '409', pausedAt, Date.now(), loops);
    const paused409 = t.pulls.filter((p) => p.status === '409').length;
    console.info(`409 phase: ${paused409} pulls in ${Date.now() - pausedAt} ms by ${loops} loops = ${rate.toFixed(2)} pulls/s per loop`);
    expect(paused409).toBeGreaterThan(0);
    expect(rate).toBeLessThanOrEqual(1);
    expect(t.acks.filter((s) => s !== 'committed')).toEqual([]);
    expect(consumerState(emulator, destination).committed).not.toBeNull();
    await fetch(`${emulator.url}/v1/event-destinations/${destination}/resume`, { method: 'POST', headers: auth });
    expect(await worker.done).toEqual({ reason: 'idle' });
    const lines = records(record);
    expect(new Set(lines.map((l) => l.eventId)).size).toBe(300);
    expect(lines.length).toBe(300);
    const state = consumerState(emulator, destination);
    expect(state.committed).toBe(state.head);
  }, 60_000);
});
