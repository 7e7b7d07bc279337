import { join } from 'node:path';
import type pg from 'pg';
import { expect } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { CliProcess, REPO_ROOT, runCli } from '../cli/cli-process.js';
import { consumerState, waitFor } from '../worker/harness.js';
import { runArgs } from './effects.js';

/** What the exactly-once scenarios share: one consumer, one PostgreSQL store and prefix, one effect table. */
export interface Scenario {
  emulator: RunningEmulator;
  db: pg.Client;
  destination: string;
  dir: string;
  prefix: string;
  table: string;
  /** The idempotency store (and, unless `deadLetter` says otherwise, the sink). */
  url: string;
  handlers: string;
  children: CliProcess[];
}

/** A `durable-worker run` replica of the scenario; `options` adds or replaces flags. */
export function startReplica(s: Scenario, workerIdPrefix: string, options: Record<string, string | number>, env: Record<string, string>): CliProcess {
  const child = new CliProcess(
    runArgs(s.emulator, s.destination, s.dir, {
      handlers: join(REPO_ROOT, s.handlers),
      'shutdown-timeout': 1,
      idempotency: s.url,
      'idempotency-prefix': s.prefix,
      'worker-id-prefix': workerIdPrefix,
      'idempotency-ttl': '10m',
      'log-level': 'info',
      ...options,
    }),
    { env: { DW_TEST_TX_TABLE: s.table, ...env } },
  );
  s.children.push(child);
  return child;
}

/**
 * Every event's runs ended: the cursor at the head, no lease held, and no run deferred in the store
 * (a failed run's retry waits there, not in its lease).
 */
export async function untilDrained(s: Pick<Scenario, 'emulator' | 'db' | 'destination' | 'prefix'>, timeoutMs = 180_000): Promise<void> {
  await waitFor(
    'the cursor at the head and no deferred run',
    async () => {
      const state = consumerState(s.emulator, s.destination);
      if (state.committed !== state.head || state.leased !== 0) return false;
      const deferred = await s.db
        .query<{ n: string }>('SELECT count(*) AS n FROM durable_worker_deferred WHERE prefix = $1', [s.prefix])
        .catch(() => ({ rows: [{ n: '0' }] }));
      return Number(deferred.rows[0]?.n) === 0;
    },
    timeoutMs,
    100,
  );
}

/** Each event id's rows in the effect table: count, distinct ids, the ids missing and those twice or more. */
export async function effectCounts(s: Scenario, ids: readonly string[]): Promise<{ total: number; distinct: number; missing: string[]; twice: string[] }> {
  const counts = await s.db.query<{ total: string; distinct_ids: string }>(
    `SELECT count(*) AS total, count(DISTINCT event_id) AS distinct_ids FROM ${s.table}`,
  );
  const { total, distinct_ids } = counts.rows[0] as { total: string; distinct_ids: string };
  const missing = await s.db.query<{ id: string }>(`SELECT id FROM unnest($1::text[]) AS id EXCEPT SELECT event_id FROM ${s.table}`, [ids]);
  const twice = await s.db.query<{ event_id: string }>(`SELECT event_id FROM ${s.table} GROUP BY event_id HAVING count(*) > 1`);
  return { total: Number(total), distinct: Number(distinct_ids), missing: missing.rows.map((r) => r.id), twice: twice.rows.map((r) => r.event_id) };
}

/** `dead-letters replay` of the scenario's prefix through the CLI; exit 0 or 1 (some failed), never 2. */
export async function replayDeadLetters(s: Scenario, sinkUrl: string, extra: readonly string[] = []): Promise<string> {
  const args = [
    'dead-letters',
    'replay',
    '--dead-letter',
    sinkUrl,
    '--handlers',
    join(REPO_ROOT, s.handlers),
    '--idempotency',
    s.url,
    '--idempotency-prefix',
    s.prefix,
    ...extra,
  ];
  const result = await runCli(args, { env: { DW_TEST_TX_TABLE: s.table } });
  expect([0, 1], result.stdout + result.stderr).toContain(result.code);
  return result.stdout;
}
