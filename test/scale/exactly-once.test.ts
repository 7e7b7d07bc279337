import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mulberry32 } from '../../src/emulator/faults/injector.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { CliProcess, REPO_ROOT, runCli, waitReady } from '../cli/cli-process.js';
import { createIdempotencyStore } from '../../src/idempotency/index.js';
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
 * fires (their outcome is the call's, never a dead letter), and a kill between a dead-letter write
 * and its done marks (the event comes back and is applied), each followed by `dead-letters replay`
 * twice: every id still exactly once.
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

/** The same database through PgBouncer in transaction pooling (`.ci/services.sh` starts one; URL with `?pool_mode=transaction`). */
const PGBOUNCER_URL = process.env.PGBOUNCER_URL;

describe('exactly-once through PgBouncer environment', () => {
  it.runIf(underCi())('has PGBOUNCER_URL in CI', () => {
    expect(PGBOUNCER_URL, 'PGBOUNCER_URL must be set in CI (eval "$(bash .ci/services.sh)")').toBeTruthy();
  });
});

const VARIANTS = [
  { name: 'a single-event handler', handlers: 'test/fixtures/exactly-once/single', isolation: 'thread', url: DATABASE_URL },
  { name: 'a batch handler', handlers: 'test/fixtures/exactly-once/batch', isolation: 'none', url: DATABASE_URL },
  {
    name: 'a single-event handler through PgBouncer (transaction pooling)',
    handlers: 'test/fixtures/exactly-once/single',
    isolation: 'none',
    url: PGBOUNCER_URL,
  },
] as const;

for (const variant of VARIANTS) {
  describe.skipIf(DATABASE_URL === undefined || variant.url === undefined)(`exactly once with ${variant.name}`, () => {
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
              idempotency: variant.url as string,
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

        // The cursor at the head, and no run left deferred in the store (a failed run's retry waits there).
        await untilDrained({ emulator, db, destination, prefix });
        const counts = await db.query<{ total: string; distinct_ids: string }>(
          `SELECT count(*) AS total, count(DISTINCT event_id) AS distinct_ids FROM ${table}`,
        );
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
          emulator,
          db,
          dir,
          table,
          children,
          destination: await createConsumer(emulator, 'exactly-once-deadline'),
          prefix: `exactly-once-deadline-${randomUUID()}`,
          url: DATABASE_URL as string,
          handlers: 'test/fixtures/exactly-once/deadline',
        };
        // No breaker: most calls fail here on purpose, and its cool-downs would only slow the race down.
        const options = { workers: 2, limit: 50, concurrency: 16, visibility: 30, isolation, 'max-attempts': 1, breaker: 'false' };
        const worker = startReplica(s, 'racer', options, { DW_TEST_WAIT_MIN_MS: '120', DW_TEST_WAIT_MAX_MS: '230' });
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

const POISON_EVENTS = 400;

describe.skipIf(DATABASE_URL === undefined)('exactly once when a worker is killed between a dead-letter write and its done marks', () => {
  it(`${POISON_EVENTS} events, every 10th dead-lettered on its first delivery, a SIGKILL while their marks are held, redelivery, two replays: every id exactly once`, async () => {
    const suffix = randomUUID().replaceAll('-', '').slice(0, 12);
    const table = `dw_exactly_once_${suffix}`;
    const prefix = `exactly-once-kill-dl-${randomUUID()}`;
    await db.query(`CREATE TABLE ${table} (event_id text NOT NULL, pid integer NOT NULL)`);
    // The marks that say a key ended dead-lettered wait (longer than the store's statement timeout):
    // the record is written, its key's marks are not, when the worker is killed.
    await (await createIdempotencyStore(DATABASE_URL as string, { prefix, doneTtlMs: 600_000, poolSize: 1 })).close();
    await db.query(`CREATE FUNCTION dw_test_hold_${suffix}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.prefix = '${prefix}' AND NEW.key LIKE '/dead/%' THEN PERFORM pg_sleep(30); END IF; RETURN NEW; END $$`);
    await db.query(
      `CREATE TRIGGER dw_test_hold_${suffix} BEFORE INSERT OR UPDATE ON durable_worker_idempotency FOR EACH ROW EXECUTE FUNCTION dw_test_hold_${suffix}()`,
    );
    const dropHold = () =>
      db.query(`DROP TRIGGER IF EXISTS dw_test_hold_${suffix} ON durable_worker_idempotency; DROP FUNCTION IF EXISTS dw_test_hold_${suffix}()`);
    try {
      const dir = tempDir('exactly-once-kill-dl');
      const s: Scenario = {
        emulator,
        db,
        dir,
        table,
        children,
        prefix,
        destination: await createConsumer(emulator, 'exactly-once-kill-dl'),
        url: DATABASE_URL as string,
        handlers: 'test/fixtures/exactly-once/poison',
      };
      const options = { workers: 2, limit: 20, concurrency: 8, visibility: 4, isolation: 'none', 'max-attempts': 1 };
      const first = startReplica(s, 'killed', options, { DW_TEST_POISON: '1' });
      await waitReady(first);
      const { ids } = appendEffectEvents(emulator, POISON_EVENTS, (i) => ({ poison: i % 10 === 3 }));
      const file = join(dir, 'dead-letter.jsonl');
      await waitFor('a dead-letter record whose marks are held', () => deadLetters(file).length >= 1, 60_000, 20);
      first.kill('SIGKILL');
      expect((await first.exited).signal).toBe('SIGKILL');
      // The killed worker's held statements end now rather than after the store's statement timeout.
      await db.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'PgSleep' AND pid <> pg_backend_pid()`,
      );
      await dropHold();
      const killedRecords = deadLetters(file).map((record) => record.event.id);

      const second = startReplica(s, 'after-kill', options, { DW_TEST_POISON: '1' });
      await waitReady(second);
      await untilDrained(s);
      second.kill('SIGTERM');
      expect((await second.exited).code).toBe(0);
      // The events of the records written before the kill came back and were applied.
      const applied = new Set((await db.query<{ event_id: string }>(`SELECT event_id FROM ${table}`)).rows.map((r) => r.event_id));
      expect(killedRecords.filter((id) => applied.has(id)).length).toBeGreaterThan(0);

      const sink = `file:${file}`;
      await replayDeadLetters(s, sink);
      await replayDeadLetters(s, sink);
      expect(await effectCounts(s, ids)).toEqual({ total: POISON_EVENTS, distinct: POISON_EVENTS, missing: [], twice: [] });
      const list = await runCli(['dead-letters', 'list', '--json', '--dead-letter', sink]);
      const states = list.stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { state: string; event: { id: string } });
      expect(states.filter((r) => killedRecords.includes(r.event.id) && applied.has(r.event.id)).every((r) => r.state === 'resolved')).toBe(true);
    } finally {
      await dropHold();
      await db.query(`DROP TABLE IF EXISTS ${table}`);
    }
  }, 300_000);
});
