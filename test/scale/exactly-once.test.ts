import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mulberry32 } from '../../src/emulator/faults/injector.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { CliProcess, REPO_ROOT, waitReady } from '../cli/cli-process.js';
import { underCi } from '../fixtures/ci.js';
import { consumerState, createConsumer, tempDir, waitFor } from '../worker/harness.js';
import { appendEffectEvents, runArgs } from './effects.js';
import { effectCounts, replayDeadLetters, startReplica, untilDrained, type Scenario } from './exactly-once-run.js';
import { deadLetters } from '../worker/harness.js';

/**
 * Exactly-once effects into PostgreSQL, proven by killing: two `durable-worker run` processes share
 * one PostgreSQL store and one consumer, and a transactional handler inserts each event id into a
 * table WITHOUT a unique constraint. One of the two is SIGKILLed at random instants, at least five
 * times, and restarted each time. The table must hold every event id exactly once (count = distinct
 * = events) and the cursor must reach the head. DW_KILL_SEED replays the kill instants.
 *
 * The doors around the transaction are raced too: commits in flight when the handler's deadline
 * fires (their outcome is the call's, never a dead letter), then `dead-letters replay` twice: every
 * id still exactly once.
 */
const DATABASE_URL = process.env.DATABASE_URL;

describe('exactly-once test environment', () => {
  it.runIf(underCi())('has DATABASE_URL in CI', () => {
    expect(DATABASE_URL, 'DATABASE_URL must be set in CI (eval "$(bash .ci/services.sh)")').toBeTruthy();
  });
  if (DATABASE_URL === undefined) console.warn('[scale] exactly-once kill test skipped: DATABASE_URL is not set');
});

const EVENTS = 10_000;
const KILLS = 6;
const VISIBILITY_SECONDS = 4;

let emulator: RunningEmulator;
let db: pg.Client;
const children: CliProcess[] = [];

beforeAll(async () => {
  if (DATABASE_URL === undefined) return;
  emulator = await startEmulator({ port: 0 });
  db = new pg.Client({ connectionString: DATABASE_URL });
  await db.connect();
});
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});
afterAll(async () => {
  await db?.end();
  await emulator?.close();
});

const VARIANTS = [
  { name: 'a single-event handler', handlers: 'test/fixtures/exactly-once/single', isolation: 'thread' },
  { name: 'a batch handler', handlers: 'test/fixtures/exactly-once/batch', isolation: 'none' },
] as const;

for (const variant of VARIANTS) {
  describe.skipIf(DATABASE_URL === undefined)(`exactly once with ${variant.name}`, () => {
    it(`two replicas, ${KILLS} SIGKILLs at random instants: every event id in the table exactly once, cursor at head`, async () => {
      const seed = Number(process.env.DW_KILL_SEED ?? Math.floor(Math.random() * 2 ** 31));
      const next = mulberry32(seed);
      const replay = `replay: DW_KILL_SEED=${seed} npx vitest run test/scale/exactly-once.test.ts`;
      const table = `dw_exactly_once_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
      await db.query(`CREATE TABLE ${table} (event_id text NOT NULL, pid integer NOT NULL)`);
      try {
        const dir = tempDir('exactly-once');
        const destination = await createConsumer(emulator, 'exactly-once');
        const prefix = `exactly-once-${randomUUID()}`;
        const env = { DW_TEST_TX_TABLE: table, DW_TEST_EFFECT_DELAY_MS: '20' };
        const start = (workerIdPrefix: string) => {
          const child = new CliProcess(
            runArgs(emulator, destination, dir, {
              handlers: join(REPO_ROOT, variant.handlers),
              workers: 2,
              limit: 50,
              concurrency: 8,
              visibility: VISIBILITY_SECONDS,
              'shutdown-timeout': 1,
              isolation: variant.isolation,
              idempotency: DATABASE_URL as string,
              'idempotency-prefix': prefix,
              'worker-id-prefix': workerIdPrefix,
              'idempotency-ttl': '10m',
              'log-level': 'info',
            }),
            { env },
          );
          children.push(child);
          return child;
        };
        const replicas = { a: start('replica-a'), b: start('replica-b') };
        await Promise.all([waitReady(replicas.a), waitReady(replicas.b)]);
        const { ids } = appendEffectEvents(emulator, EVENTS);
        const committed = () => consumerState(emulator, destination);
        const rows = async () => Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`)).rows[0]?.n ?? 0);

        // Kill one replica at a random instant, restart it under the same workerIds (its leases
        // come back at once), and again, while work remains.
        let kills = 0;
        while (kills < KILLS) {
          await new Promise((resolve) => setTimeout(resolve, 300 + next() * 1_200));
          const state = committed();
          if (state.committed === state.head && state.leased === 0) break;
          const victim = next() < 0.5 ? 'a' : 'b';
          replicas[victim].kill('SIGKILL');
          expect((await replicas[victim].exited).signal, replay).toBe('SIGKILL');
          kills++;
          replicas[victim] = start(`replica-${victim}`);
        }
        expect(kills, `the work ended after ${kills} kills, before ${KILLS} (${replay})`).toBe(KILLS);
        expect(await rows(), replay).toBeLessThan(EVENTS);

        await waitFor(
          'the cursor at the head',
          () => {
            const state = committed();
            return state.committed === state.head && state.leased === 0;
          },
          180_000,
          100,
        );
        const counts = await db.query<{ total: string; distinct_ids: string }>(`SELECT count(*) AS total, count(DISTINCT event_id) AS distinct_ids FROM ${table}`);
        const { total, distinct_ids } = counts.rows[0] as { total: string; distinct_ids: string };
        expect({ total: Number(total), distinct: Number(distinct_ids) }, replay).toEqual({ total: EVENTS, distinct: EVENTS });
        const missing = await db.query<{ id: string }>(`SELECT id FROM unnest($1::text[]) AS id EXCEPT SELECT event_id FROM ${table}`, [ids]);
        expect(missing.rows, replay).toEqual([]);
        // Both replicas still run: they drain and exit cleanly.
        replicas.a.kill('SIGTERM');
        replicas.b.kill('SIGTERM');
        for (const end of await Promise.all([replicas.a.exited, replicas.b.exited])) expect(end.code, end.stderr).toBe(0);
      } finally {
        await db.query(`DROP TABLE IF EXISTS ${table}`);
      }
    }, 300_000);
  });
}

const RACE_EVENTS = 600;

for (const isolation of ['none', 'thread'] as const) {
  describe.skipIf(DATABASE_URL === undefined)(`exactly once when commits race the deadline (isolation ${isolation})`, () => {
    it(`${RACE_EVENTS} events, timeoutMs 200, waits of 120-230 ms, --max-attempts 1, then two replays: every id exactly once`, async () => {
      const table = `dw_exactly_once_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
      await db.query(`CREATE TABLE ${table} (event_id text NOT NULL, pid integer NOT NULL)`);
      try {
        const dir = tempDir('exactly-once-deadline');
        const s: Scenario = {
          emulator, db, dir, table, children,
          destination: await createConsumer(emulator, 'exactly-once-deadline'),
          prefix: `exactly-once-deadline-${randomUUID()}`,
          url: DATABASE_URL as string,
          handlers: 'test/fixtures/exactly-once/deadline',
        };
        const worker = startReplica(s, 'racer', { workers: 2, limit: 50, concurrency: 16, visibility: 30, isolation, 'max-attempts': 1 }, { DW_TEST_WAIT_MIN_MS: '120', DW_TEST_WAIT_MAX_MS: '230' });
        await waitReady(worker);
        const { ids } = appendEffectEvents(emulator, RACE_EVENTS);
        await untilDrained(s);
        worker.kill('SIGTERM');
        expect((await worker.exited).code).toBe(0);
        // The race happened: calls timed out (their effects rolled back) and were dead-lettered.
        const sink = `file:${join(dir, 'dead-letter.jsonl')}`;
        const dead = deadLetters(join(dir, 'dead-letter.jsonl'));
        expect(dead.length).toBeGreaterThan(RACE_EVENTS / 10);
        // Every dead letter is an event whose effect did not commit.
        const before = await effectCounts(s, ids);
        expect(before.twice).toEqual([]);
        const applied = new Set((await db.query<{ event_id: string }>(`SELECT event_id FROM ${table}`)).rows.map((r) => r.event_id));
        expect(dead.filter((record) => applied.has(record.event.id)).map((record) => record.event.id)).toEqual([]);

        await replayDeadLetters(s, sink);
        await replayDeadLetters(s, sink);
        expect(await effectCounts(s, ids)).toEqual({ total: RACE_EVENTS, distinct: RACE_EVENTS, missing: [], twice: [] });
      } finally {
        await db.query(`DROP TABLE IF EXISTS ${table}`);
      }
    }, 300_000);
  });
}
