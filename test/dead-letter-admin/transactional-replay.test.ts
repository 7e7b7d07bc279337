/**
 * Replaying the dead letters of a transactional handler: its writes commit with the replay's done
 * mark, in the record's prefix, so a second replay writes nothing; a replay that fails commits
 * nothing; and without a PostgreSQL store the replay is refused, naming the handler.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDeadLetters } from '../../src/dead-letter-admin/api.js';
import { openDeadLetterStore } from '../../src/dead-letter/index.js';
import { ConfigError } from '../../src/errors.js';
import { createIdempotencyStore } from '../../src/idempotency/index.js';
import { deadLetter } from '../dead-letter/contract.js';
import { underCi } from '../fixtures/ci.js';

const DATABASE_URL = process.env.DATABASE_URL;
const HANDLERS = fileURLToPath(new URL('../fixtures/replay-transactional', import.meta.url));
const PREFIX = `replay-tx-${randomUUID()}`;
const root = mkdtempSync(join(tmpdir(), 'dw-replay-tx-'));
const table = `dw_replay_tx_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
let db: pg.Client;

describe('transactional replay environment', () => {
  it.runIf(underCi())('has DATABASE_URL in CI', () => expect(DATABASE_URL).toBeTruthy());
});

beforeAll(async () => {
  process.env.DW_TEST_TX_TABLE = table;
  if (DATABASE_URL === undefined) return;
  db = new pg.Client({ connectionString: DATABASE_URL });
  await db.connect();
  await db.query(`CREATE TABLE ${table} (event_id text NOT NULL)`);
  // The store makes its table (the transactions write into it).
  await (await createIdempotencyStore(DATABASE_URL, { prefix: PREFIX, doneTtlMs: 600_000, poolSize: 1 })).close();
});
afterAll(async () => {
  delete process.env.DW_TEST_TX_TABLE;
  await db?.query(`DROP TABLE IF EXISTS ${table}`);
  await db?.end();
  rmSync(root, { recursive: true, force: true });
});

async function replayAll(sinkUrl: string, idempotencyUrl: string, isolation: 'none' | 'thread'): Promise<string[]> {
  const sink = await openDeadLetters(sinkUrl);
  const outcomes: string[] = [];
  try {
    await sink.replay({}, { handlersDir: HANDLERS, isolation, idempotencyUrl, visibilitySeconds: 10, onResult: (r) => outcomes.push(`${r.id} ${r.outcome}`) });
  } finally {
    await sink.close();
  }
  return outcomes.sort();
}

async function seed(sinkUrl: string, ...eventIds: { id: string; data?: Record<string, unknown> }[]): Promise<void> {
  const sink = await openDeadLetterStore(sinkUrl, { prefix: PREFIX });
  for (const { id, data } of eventIds) await sink.write(deadLetter({ eventId: id, handler: 'orders', data: data ?? {} }));
  await sink.close();
}

const rows = async (ids: string[]) =>
  (await db.query<{ event_id: string }>(`SELECT event_id FROM ${table} WHERE event_id = ANY($1) ORDER BY event_id`, [ids])).rows.map((r) => r.event_id);

describe.skipIf(DATABASE_URL === undefined)('replaying a transactional handler', () => {
  it.each(['none', 'thread'] as const)(
    'commits its writes once with the replay (isolation %s); a second replay writes nothing; a failing one commits nothing',
    async (isolation) => {
      const sinkUrl = `file:${join(root, `${isolation}.jsonl`)}`;
      const ids = [`${isolation}-a`, `${isolation}-b`];
      await seed(sinkUrl, { id: ids[0] as string }, { id: ids[1] as string }, { id: `${isolation}-bad`, data: { failAfterInsert: true } });
      expect(await replayAll(sinkUrl, DATABASE_URL as string, isolation)).toEqual([
        `orders:${ids[0]} replayed`,
        `orders:${ids[1]} replayed`,
        `orders:${isolation}-bad failed`,
      ]);
      expect(await rows([...ids, `${isolation}-bad`])).toEqual(ids);
      // Replayed records are not run again; the failed one fails again and still commits nothing.
      expect(await replayAll(sinkUrl, DATABASE_URL as string, isolation)).toEqual([`orders:${isolation}-bad failed`]);
      expect(await rows([...ids, `${isolation}-bad`])).toEqual(ids);
    },
  );

  it('is refused without a PostgreSQL store, naming the handler and the option', async () => {
    const sinkUrl = `file:${join(root, 'refused.jsonl')}`;
    await seed(sinkUrl, { id: 'refused-a' });
    const error = await replayAll(sinkUrl, `sqlite:${join(root, 'idempotency.sqlite')}`, 'none').catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/orders\.ts: transactional: true needs --idempotency postgres:/);
  });
});
