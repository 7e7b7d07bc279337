/**
 * `durable-worker deferred list | run-now | drop` (docs/operations.md, "Deferred runs") as a user runs
 * it, a process of its own, against a SQLite store holding deferred runs as the worker writes them.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chainOf, deferredRunsOf, type DeferredRun } from '../../src/idempotency/deferred.js';
import { createIdempotencyStore } from '../../src/idempotency/index.js';
import { tempDir } from '../worker/harness.js';
import { runCli } from './cli-process.js';

const PREFIX = 'dev-tenant:orders';

async function storeWithRuns(): Promise<{ url: string; runs: DeferredRun[] }> {
  const url = `sqlite:${join(tempDir('cli-deferred'), 'store.db')}`;
  const now = Date.now();
  const event = (id: string, sequence: string, subject: string) =>
    ({
      specversion: '1.0',
      id,
      source: 'test',
      type: 'orders.created',
      subject,
      time: new Date(now).toISOString(),
      sequence,
      data: {},
    }) as unknown as DeferredRun['event'];
  const runs: DeferredRun[] = [
    {
      key: 'sync:e-1',
      handler: 'sync',
      chain: chainOf('sync', 'o-1'),
      sequence: '1',
      event: event('e-1', '1', 'o-1'),
      retryAtMs: now + 600_000,
      deferredAtMs: now - 5_000,
      reason: 'retry',
    },
    {
      key: 'sync:e-2',
      handler: 'sync',
      chain: chainOf('sync', 'o-1'),
      sequence: '2',
      event: event('e-2', '2', 'o-1'),
      retryAtMs: now + 600_000,
      deferredAtMs: now - 4_000,
      reason: 'chain',
    },
    {
      key: 'audit:e-3',
      handler: 'audit',
      chain: chainOf('audit', 'o-2'),
      sequence: '3',
      event: event('e-3', '3', 'o-2'),
      retryAtMs: now + 60_000,
      deferredAtMs: now - 1_000,
      reason: 'breaker',
    },
  ];
  const store = await createIdempotencyStore(url, { prefix: PREFIX, doneTtlMs: 600_000 });
  await deferredRunsOf(store)!.defer(runs, 'test-owner');
  await store.close();
  return { url, runs };
}

const options = (url: string) => ['--idempotency', url, '--idempotency-prefix', PREFIX];

async function openRuns(url: string) {
  const store = await createIdempotencyStore(url, { prefix: PREFIX, doneTtlMs: 600_000 });
  return { store, deferred: deferredRunsOf(store)! };
}

describe('durable-worker deferred', () => {
  it("lists the runs in chain order, as a table or JSON lines, one handler's with --handler", async () => {
    const { url } = await storeWithRuns();
    const table = await runCli(['deferred', 'list', ...options(url)]);
    expect(table.code, table.stderr).toBe(0);
    const lines = table.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^KEY\s+HANDLER\s+SUBJECT\s+SEQUENCE\s+REASON\s+DUE\s+AGE$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/).slice(0, 5))).toEqual([
      ['audit:e-3', 'audit', 'o-2', '3', 'breaker'],
      ['sync:e-1', 'sync', 'o-1', '1', 'retry'],
      ['sync:e-2', 'sync', 'o-1', '2', 'chain'],
    ]);
    const json = await runCli(['deferred', 'list', '--json', '--handler', 'sync', ...options(url)]);
    expect(
      json.stdout
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as DeferredRun).key),
    ).toEqual(['sync:e-1', 'sync:e-2']);
  });

  it('run-now makes a run due at once; an unknown key exits 1 naming it', async () => {
    const { url } = await storeWithRuns();
    const before = Date.now();
    const now = await runCli(['deferred', 'run-now', 'sync:e-1', ...options(url)]);
    expect(now.code, now.stderr).toBe(0);
    expect(now.stdout).toContain('due now: sync:e-1');
    const { store, deferred } = await openRuns(url);
    try {
      expect((await deferred.get('sync:e-1'))?.retryAtMs).toBeLessThanOrEqual(Date.now());
      expect((await deferred.get('sync:e-1'))?.retryAtMs).toBeGreaterThanOrEqual(before - 1_000);
    } finally {
      await store.close();
    }
    const unknown = await runCli(['deferred', 'run-now', 'sync:nope', ...options(url)]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no deferred run sync:nope');
  });

  it('drop needs --yes; with it the run leaves the store and its key is done (a redelivery skips it)', async () => {
    const { url } = await storeWithRuns();
    const refused = await runCli(['deferred', 'drop', 'sync:e-2', ...options(url)]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--yes');
    const dropped = await runCli(['deferred', 'drop', 'sync:e-2', '--yes', ...options(url)]);
    expect(dropped.code, dropped.stderr).toBe(0);
    expect(dropped.stdout).toContain('dropped sync:e-2');
    const { store, deferred } = await openRuns(url);
    try {
      expect(await deferred.get('sync:e-2')).toBeUndefined();
      expect((await store.claim(['sync:e-2', 'sync:e-1'], 'another-owner', 10_000)).states).toEqual(['done', 'new']);
    } finally {
      await store.close();
    }
  });

  it('refuses the memory store and a missing prefix with exit 2, naming the option', async () => {
    const memory = await runCli(['deferred', 'list', '--idempotency', 'memory', '--idempotency-prefix', PREFIX]);
    expect(memory.code).toBe(2);
    expect(memory.stderr).toContain('--idempotency');
    const noPrefix = await runCli(['deferred', 'list', '--idempotency', 'memory']);
    expect(noPrefix.code).toBe(2);
    expect(noPrefix.stderr).toContain('--destination');
  });
});
