import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Pool } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WorkerConfig } from '../../src/config/types.js';
import { ConfigError, ErrorCodes } from '../../src/errors.js';
import { PostgresIdempotencyStore } from '../../src/idempotency/postgres.js';
import { EffectTransactions } from '../../src/idempotency/postgres-transactions.js';
import type { WorkerEventMap } from '../../src/observability/worker-events.js';
import type { RunningWorker } from '../../src/worker/running-worker.js';
import { startWorker } from '../../src/worker/start.js';
import { runCli } from '../cli/cli-process.js';
import { underCi } from '../fixtures/ci.js';
import {
  appendBehave,
  createConsumer,
  deadLetters,
  emulatorForFile,
  FAST,
  silent,
  tempDir,
  untilCommitted,
  untilSettled,
  waitFor,
  workerConfig,
} from './harness.js';

/**
 * Transactional handlers through the real worker (docs/handlers.md, "Transactional handlers"): the
 * handler's insert and its event's done mark commit in one PostgreSQL transaction, or neither does.
 * Every effect table here has no unique constraint, so an effect applied twice shows as two rows:
 * each test asserts count = distinct = the exact set of event ids expected.
 */
const DATABASE_URL = process.env.DATABASE_URL;
const HANDLERS = fileURLToPath(new URL('../fixtures/handlers-transactional', import.meta.url));

describe('transactional worker environment', () => {
  // CI must exercise the real database: a missing variable fails there instead of skipping quietly.
  it.runIf(underCi())('has DATABASE_URL in CI', () => {
    expect(DATABASE_URL, 'DATABASE_URL must be set in CI (eval "$(bash .ci/services.sh)")').toBeTruthy();
  });
  if (DATABASE_URL === undefined) console.warn('[worker] transactional handler suite skipped: DATABASE_URL is not set');
});

const t = emulatorForFile();

describe('transactional handlers need a PostgreSQL store', () => {
  it('startWorker refuses them with another store: a ConfigError naming --idempotency', async () => {
    const dir = tempDir('tx-refused');
    const destination = await createConsumer(t.emulator);
    for (const idempotencyUrl of ['memory', `sqlite:${join(dir, 'store.db')}`]) {
      const started = startWorker(workerConfig(t.emulator, destination, dir, { handlersDir: HANDLERS, idempotencyUrl }), { logger: silent, timings: FAST });
      await expect(started).rejects.toBeInstanceOf(ConfigError);
      await expect(started).rejects.toMatchObject({
        option: '--idempotency',
        code: ErrorCodes.CONFIG,
        message: expect.stringMatching(/single\.ts.*batch\.ts|batch\.ts.*single\.ts/),
      });
    }
  });

  it('durable-worker run exits 2 naming --idempotency and each transactional handler', async () => {
    const dir = tempDir('tx-refused-run');
    const destination = await createConsumer(t.emulator);
    const args = ['run', '--base-url', t.emulator.url, '--tenant', 'dev-tenant', '--client-id', 'dev-client', '--client-secret', 'dev-secret'];
    args.push(
      '--destination',
      destination,
      '--handlers',
      HANDLERS,
      '--idempotency',
      'memory',
      '--dead-letter',
      `file:${join(dir, 'dead-letter.jsonl')}`,
      '--metrics-port',
      '0',
      '--isolation',
      'none',
    );
    const result = await runCli(args, { cwd: dir });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(/transactional: true needs --idempotency postgres:\/\//);
    expect(result.stderr).toContain('single.ts');
    expect(result.stderr).toContain('batch.ts');
  });
});

/** One run of a handler as the fixtures write it, outside the transaction. */
interface Run {
  eventId: string;
  attempt: number;
  deliveryAttempt: number;
}

function runsIn(file: string): Run[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const [eventId = '', attempt = '0', deliveryAttempt = '0'] = line.split(' ');
      return { eventId, attempt: Number(attempt), deliveryAttempt: Number(deliveryAttempt) };
    });
}

type Done = WorkerEventMap['run:done'][0];

/** What `worker` reports of each event's runs, as they end. */
function doneOf(worker: RunningWorker): Done[] {
  const done: Done[] = [];
  worker.events.on('run:done', (e) => done.push(e));
  return done;
}

const sorted = (ids: readonly (string | undefined)[]): string[] => [...(ids as string[])].sort();

for (const isolation of ['none', 'thread'] as const) {
  describe.skipIf(DATABASE_URL === undefined)(`transactional handlers through the worker (isolation ${isolation})`, () => {
    const url = DATABASE_URL as string;
    let probe: Pool;
    const tables: string[] = [];
    const closing: { close(): Promise<void> }[] = [];

    beforeAll(async () => {
      const pg = (await import('pg')).default;
      probe = new pg.Pool({ connectionString: url, max: 2 });
    });
    afterAll(async () => {
      for (const c of closing.splice(0)) await c.close().catch(() => {});
      for (const table of tables) await probe.query(`DROP TABLE IF EXISTS ${table}`).catch(() => {});
      await probe?.end();
    });

    /** A fresh effect table, with no unique constraint: a second commit of an effect is a second row. */
    async function effectTable(): Promise<string> {
      const table = `dw_txw_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
      await probe.query(`CREATE TABLE ${table} (event_id text NOT NULL, attempt integer NOT NULL)`);
      tables.push(table);
      return table;
    }

    async function rowsOf(table: string): Promise<{ count: number; distinct: number; ids: string[]; attempts: Map<string, number[]> }> {
      const { rows } = await probe.query<{ event_id: string; attempt: number }>(`SELECT event_id, attempt FROM ${table} ORDER BY event_id, attempt`);
      const attempts = new Map<string, number[]>();
      for (const row of rows) attempts.set(row.event_id, [...(attempts.get(row.event_id) ?? []), row.attempt]);
      return { count: rows.length, distinct: attempts.size, ids: sorted([...attempts.keys()]), attempts };
    }

    /** The store's rows of a prefix, as `key -> state`. */
    async function marksOf(prefix: string): Promise<Map<string, string>> {
      const { rows } = await probe.query<{ key: string; state: string }>(
        'SELECT key, state FROM durable_worker_idempotency WHERE prefix = $1 AND expires_at > now()',
        [prefix],
      );
      return new Map(rows.map((row) => [row.key, row.state]));
    }

    function txConfig(destination: string, dir: string, prefix: string, overrides: Partial<WorkerConfig> = {}): WorkerConfig {
      return workerConfig(t.emulator, destination, dir, {
        handlersDir: HANDLERS,
        idempotencyUrl: url,
        idempotencyPrefix: prefix,
        isolation,
        workers: 1,
        ...overrides,
      });
    }

    async function start(config: WorkerConfig, options: Parameters<typeof startWorker>[1] = {}): Promise<{ worker: RunningWorker; done: Done[] }> {
      const worker = await startWorker(config, { logger: silent, timings: FAST, ...options });
      t.running.push(worker);
      return { worker, done: doneOf(worker) };
    }

    it("commits each event's insert and its done mark together: N rows, every key done, without a separate done-mark write", async () => {
      const dir = tempDir('tx-plain');
      const table = await effectTable();
      const prefix = `tx-${randomUUID()}`;
      const destination = await createConsumer(t.emulator);
      const events = appendBehave(
        t.emulator,
        12,
        () => ({ table }),
        (i) => `s-${i % 4}`,
        'tx.single',
      );
      // The store the worker uses for claims, watched: a transactional run must not need its markDone.
      const store = await PostgresIdempotencyStore.open({ url, prefix, doneTtlMs: 600_000, poolSize: 2 });
      closing.push(store);
      const separateMarks: string[] = [];
      const markDone = store.markDone.bind(store);
      store.markDone = (keys) => {
        separateMarks.push(...keys);
        return markDone(keys);
      };
      const { done } = await start(txConfig(destination, dir, prefix), { store });
      await untilCommitted(t.emulator, destination);

      const rows = await rowsOf(table);
      expect(rows.count).toBe(12);
      expect(rows.distinct).toBe(12);
      expect(rows.ids).toEqual(sorted(events.map((e) => e.id)));
      expect(separateMarks).toEqual([]);
      expect(done.map((d) => d.outcome)).toEqual(Array(12).fill('ok'));
      const keys = events.map((e) => `single:${e.id}`);
      const marks = await marksOf(prefix);
      for (const key of keys) expect(marks.get(key), key).toBe('done');
      // Another owner's claim hears that every one is done: a redelivery would not run them again.
      const claimed = await store.claim(keys, `other-${randomUUID()}`, 10_000);
      expect(claimed.states).toEqual(Array(12).fill('done'));
    });

    it('a throw after the insert rolls it back; the retry after the backoff (ctx.attempt 2) commits it once', async () => {
      const dir = tempDir('tx-throw');
      const table = await effectTable();
      const runsFile = join(dir, 'runs.log');
      const destination = await createConsumer(t.emulator);
      const [event] = appendBehave(
        t.emulator,
        1,
        () => ({ table, behaviour: 'fail-until', untilAttempt: 2, runsFile }),
        () => 'flaky',
        'tx.single',
      );
      const config = txConfig(destination, dir, `tx-${randomUUID()}`, { retryBackoffMinMs: 300, retryBackoffMaxMs: 2_000 });
      const { done } = await start(config);
      await untilSettled(t.emulator, destination, config);

      expect(runsIn(runsFile).map((r) => [r.eventId, r.attempt])).toEqual([
        [event?.id, 1],
        [event?.id, 2],
      ]);
      const rows = await rowsOf(table);
      expect([rows.count, rows.distinct]).toEqual([1, 1]);
      expect(rows.attempts.get(event?.id as string)).toEqual([2]);
      expect(done.map((d) => [d.outcome, d.attempt])).toEqual([
        ['failed', 1],
        ['ok', 2],
      ]);
      expect(deadLetters(join(dir, 'dead-letter.jsonl'))).toEqual([]);
    });

    it('a PermanentError after the insert: no row, a dead letter, and the key done (never run again)', async () => {
      const dir = tempDir('tx-permanent');
      const table = await effectTable();
      const runsFile = join(dir, 'runs.log');
      const prefix = `tx-${randomUUID()}`;
      const destination = await createConsumer(t.emulator);
      const [poison] = appendBehave(
        t.emulator,
        1,
        () => ({ table, behaviour: 'permanent', runsFile }),
        () => 'poison',
        'tx.single',
      );
      const healthy = appendBehave(
        t.emulator,
        3,
        () => ({ table, runsFile }),
        (i) => `ok-${i}`,
        'tx.single',
      );
      const config = txConfig(destination, dir, prefix);
      const { done } = await start(config);
      await untilSettled(t.emulator, destination, config);

      const rows = await rowsOf(table);
      expect([rows.count, rows.distinct]).toEqual([3, 3]);
      expect(rows.ids).toEqual(sorted(healthy.map((e) => e.id)));
      const dead = deadLetters(join(dir, 'dead-letter.jsonl'));
      expect(dead.map((d) => [d.event.id, d.reason, d.attempt])).toEqual([[poison?.id, 'permanent', 1]]);
      expect((await marksOf(prefix)).get(`single:${poison?.id}`)).toBe('done');
      expect(runsIn(runsFile).filter((r) => r.eventId === poison?.id)).toHaveLength(1);
      expect(done.filter((d) => d.event.id === poison?.id).map((d) => d.outcome)).toEqual(['dead_lettered']);
    });

    it('a handler that inserts then hangs past the lease deadline, deaf to ctx.signal: never committed, ctx.tx rejects after, a later run commits once', async () => {
      const dir = tempDir('tx-deadline');
      const table = await effectTable();
      const runsFile = join(dir, 'runs.log');
      const afterFile = join(dir, 'after.log');
      const destination = await createConsumer(t.emulator);
      const [event] = appendBehave(
        t.emulator,
        1,
        () => ({ table, behaviour: 'hang-once', waitMs: 3_500, runsFile, afterFile }),
        () => 'slow',
        'tx.single',
      );
      const config = txConfig(destination, dir, `tx-${randomUUID()}`, { visibilitySeconds: 2 });
      const { done } = await start(config);
      await untilSettled(t.emulator, destination, config, 30_000);
      // The hung run's query after the abort, made once its sleep ends.
      const after = await waitFor(
        'the hung run to try ctx.tx after its deadline',
        () => (existsSync(afterFile) ? readFileSync(afterFile, 'utf8').trim() : undefined),
        15_000,
      );

      expect(after).toBe(`${event?.id} rejected ${ErrorCodes.TRANSACTION}`);
      const rows = await rowsOf(table);
      expect([rows.count, rows.distinct]).toEqual([1, 1]);
      // The row is the later run's: the hung run's insert never committed.
      expect(rows.attempts.get(event?.id as string)).toEqual([2]);
      expect(runsIn(runsFile).map((r) => r.attempt)).toEqual([1, 2]);
      const ends = done.map((d) => [d.outcome, d.error?.code]);
      expect(ends[0]).toEqual(['failed', ErrorCodes.HANDLER_TIMEOUT]);
      expect(ends.at(-1)).toEqual(['ok', undefined]);
    });

    it('a handler that always fails is dead-lettered after --max-attempts runs, with no row', async () => {
      const dir = tempDir('tx-max-attempts');
      const table = await effectTable();
      const runsFile = join(dir, 'runs.log');
      const prefix = `tx-${randomUUID()}`;
      const destination = await createConsumer(t.emulator);
      const [event] = appendBehave(
        t.emulator,
        1,
        () => ({ table, behaviour: 'fail', runsFile }),
        () => 'doomed',
        'tx.single',
      );
      const config = txConfig(destination, dir, prefix, { maxAttempts: 3 });
      const { done } = await start(config);
      await untilSettled(t.emulator, destination, config);

      expect(runsIn(runsFile).map((r) => r.attempt)).toEqual([1, 2, 3]);
      expect((await rowsOf(table)).count).toBe(0);
      const dead = deadLetters(join(dir, 'dead-letter.jsonl'));
      expect(dead.map((d) => [d.event.id, d.reason, d.attempt])).toEqual([[event?.id, 'max-attempts', 3]]);
      expect(done.map((d) => d.outcome)).toEqual(['failed', 'failed', 'dead_lettered']);
      expect((await marksOf(prefix)).get(`single:${event?.id}`)).toBe('done');
    });

    it('a handler that catches a failed statement and resolves commits nothing: its attempts count, and it is dead-lettered at --max-attempts', async () => {
      const dir = tempDir('tx-swallowed');
      const table = await effectTable();
      const runsFile = join(dir, 'runs.log');
      const destination = await createConsumer(t.emulator);
      const [event] = appendBehave(
        t.emulator,
        1,
        () => ({ table, behaviour: 'swallow-query-error', runsFile }),
        () => 'swallowed',
        'tx.single',
      );
      const healthy = appendBehave(
        t.emulator,
        3,
        () => ({ table, runsFile }),
        (i) => `h-${i}`,
        'tx.single',
      );
      const config = txConfig(destination, dir, `tx-${randomUUID()}`, { maxAttempts: 2 });
      const { done } = await start(config);
      await untilSettled(t.emulator, destination, config, 15_000);

      const rows = await rowsOf(table);
      expect([rows.count, rows.distinct]).toEqual([3, 3]);
      expect(rows.ids).toEqual(sorted(healthy.map((e) => e.id)));
      expect(
        runsIn(runsFile)
          .filter((r) => r.eventId === event?.id)
          .map((r) => r.attempt),
      ).toEqual([1, 2]);
      expect(done.filter((d) => d.event.id === event?.id).map((d) => [d.outcome, d.error?.code])).toEqual([
        ['failed', ErrorCodes.TRANSACTION],
        ['dead_lettered', ErrorCodes.TRANSACTION],
      ]);
      expect(deadLetters(join(dir, 'dead-letter.jsonl')).map((d) => [d.event.id, d.reason])).toEqual([[event?.id, 'max-attempts']]);
    });

    it('a batch call with one failing event commits none of its rows; the others commit once later, charged no attempt', async () => {
      const dir = tempDir('tx-batch');
      const table = await effectTable();
      const runsFile = join(dir, 'runs.log');
      const destination = await createConsumer(t.emulator);
      const events = appendBehave(
        t.emulator,
        6,
        (i) => (i === 2 ? { table, behaviour: 'fail-until', untilAttempt: 2, runsFile } : { table, runsFile }),
        (i) => `b-${i}`,
        'tx.batch',
      );
      const failing = events[2]?.id as string;
      const others = events.filter((e) => e.id !== failing).map((e) => e.id);
      const config = txConfig(destination, dir, `tx-${randomUUID()}`, { retryBackoffMinMs: 400, retryBackoffMaxMs: 2_000 });
      const { done } = await start(config);
      await untilSettled(t.emulator, destination, config);

      const rows = await rowsOf(table);
      expect([rows.count, rows.distinct]).toEqual([6, 6]);
      expect(rows.ids).toEqual(sorted(events.map((e) => e.id)));
      const runs = runsIn(runsFile);
      // The first call held all six, at attempt 1, and committed nothing: the ok ones ran again.
      expect(
        runs
          .slice(0, 6)
          .map((r) => [r.eventId, r.attempt])
          .sort(),
      ).toEqual(events.map((e) => [e.id, 1]).sort());
      for (const id of others) {
        expect(
          runs.filter((r) => r.eventId === id).map((r) => r.attempt),
          id,
        ).toEqual([1, 1]);
        expect(rows.attempts.get(id), id).toEqual([1]);
        // Rolled back with the call, then ok; never charged an attempt.
        expect(
          done.filter((d) => d.event.id === id).map((d) => [d.outcome, d.error?.code, d.attempt]),
          id,
        ).toEqual([
          ['failed', ErrorCodes.ROLLED_BACK, 1],
          ['ok', undefined, 1],
        ]);
      }
      expect(runs.filter((r) => r.eventId === failing).map((r) => r.attempt)).toEqual([1, 2]);
      expect(rows.attempts.get(failing)).toEqual([2]);
      expect(done.filter((d) => d.event.id === failing).map((d) => [d.outcome, d.attempt])).toEqual([
        ['failed', 1],
        ['ok', 2],
      ]);
      expect(deadLetters(join(dir, 'dead-letter.jsonl'))).toEqual([]);
    });

    it('a batch call with a PermanentError result: that event is dead-lettered without its row, the others commit once', async () => {
      const dir = tempDir('tx-batch-permanent');
      const table = await effectTable();
      const runsFile = join(dir, 'runs.log');
      const prefix = `tx-${randomUUID()}`;
      const destination = await createConsumer(t.emulator);
      const events = appendBehave(
        t.emulator,
        4,
        (i) => (i === 1 ? { table, behaviour: 'permanent', runsFile } : { table, runsFile }),
        (i) => `p-${i}`,
        'tx.batch',
      );
      const poison = events[1]?.id as string;
      const config = txConfig(destination, dir, prefix);
      const { done } = await start(config);
      await untilSettled(t.emulator, destination, config);

      const rows = await rowsOf(table);
      expect([rows.count, rows.distinct]).toEqual([3, 3]);
      expect(rows.ids).toEqual(sorted(events.filter((e) => e.id !== poison).map((e) => e.id)));
      const dead = deadLetters(join(dir, 'dead-letter.jsonl'));
      expect(dead.map((d) => [d.event.id, d.reason, d.attempt])).toEqual([[poison, 'permanent', 1]]);
      expect((await marksOf(prefix)).get(`batch:${poison}`)).toBe('done');
      expect(runsIn(runsFile).filter((r) => r.eventId === poison)).toHaveLength(1);
      expect(done.filter((d) => d.event.id === poison).map((d) => d.outcome)).toEqual(['dead_lettered']);
      for (const e of events.filter((e) => e.id !== poison)) {
        expect(done.filter((d) => d.event.id === e.id).map((d) => [d.outcome, d.error?.code, d.attempt])).toEqual([
          ['failed', ErrorCodes.ROLLED_BACK, 1],
          ['ok', undefined, 1],
        ]);
      }
    });

    it('a drain (close) while transactional calls run: each commits or rolls back, and after a restart every event has exactly one row', async () => {
      const dir = tempDir('tx-drain');
      const table = await effectTable();
      const runsFile = join(dir, 'runs.log');
      const prefix = `tx-${randomUUID()}`;
      const destination = await createConsumer(t.emulator);
      // Most calls end within the drain; every 7th outlives it, deaf to ctx.signal, and is cut.
      const events = appendBehave(
        t.emulator,
        30,
        (i) => (i % 7 === 3 ? { table, behaviour: 'sleep-ignoring-signal', waitMs: 2_500, runsFile } : { table, behaviour: 'sleep', waitMs: 150, runsFile }),
        (i) => `d-${i}`,
        'tx.single',
      );
      const config = txConfig(destination, dir, prefix, { concurrency: 6, shutdownTimeoutSeconds: 1, visibilitySeconds: 8 });
      const first = await start(config);
      await waitFor('calls running', () => runsIn(runsFile).length >= 8, 15_000);
      await first.worker.close();
      const startedBefore = new Set(runsIn(runsFile).map((r) => r.eventId));
      const deaf = new Set(events.filter((_, i) => i % 7 === 3).map((e) => e.id));
      const before = await rowsOf(table);
      expect(before.count).toBe(before.distinct);
      // A call that ends within the drain commits there; one cut at its end never does.
      for (const id of startedBefore) expect(before.attempts.has(id), id).toBe(!deaf.has(id));
      expect([...startedBefore].filter((id) => deaf.has(id)).length).toBeGreaterThan(0);

      await start({ ...config, workerIdPrefix: `w-${randomUUID().slice(0, 8)}` });
      await untilSettled(t.emulator, destination, config, 30_000);
      const rows = await rowsOf(table);
      expect([rows.count, rows.distinct]).toEqual([30, 30]);
      expect(rows.ids).toEqual(sorted(events.map((e) => e.id)));
      // The cut ones ran again after the restart; what the first worker committed did not.
      const runs = runsIn(runsFile);
      for (const id of startedBefore) expect(runs.filter((r) => r.eventId === id).length, id).toBe(deaf.has(id) ? 2 : 1);
      // Every key is done in the store.
      const marks = await marksOf(prefix);
      for (const e of events) expect(marks.get(`single:${e.id}`), e.id).toBe('done');
    });

    it("another replica holds the event's transaction: the worker hears busy, retries, and finds it done (a duplicate): one row", async () => {
      const dir = tempDir('tx-busy');
      const table = await effectTable();
      const runsFile = join(dir, 'runs.log');
      const prefix = `tx-${randomUUID()}`;
      const destination = await createConsumer(t.emulator);
      // The other replica: the same store (created by the worker's start) and prefix, its transaction opened first.
      const [event] = appendBehave(
        t.emulator,
        1,
        () => ({ table, runsFile }),
        () => 'raced',
        'tx.single',
      );
      const key = `single:${event?.id}`;
      const store = await PostgresIdempotencyStore.open({ url, prefix, doneTtlMs: 600_000, poolSize: 1 });
      closing.push(store);
      const other = await EffectTransactions.open({ url, prefix, doneTtlMs: 600_000, poolSize: 1 });
      closing.push(other);
      const held = await other.begin([key], { serverTimeoutMs: 30_000 });
      expect(held.states).toEqual(['new']);
      await held.client.query(`INSERT INTO ${table} (event_id, attempt) VALUES ($1, 0)`, [event?.id]);

      const config = txConfig(destination, dir, prefix, { visibilitySeconds: 10 });
      const { done } = await start(config);
      await waitFor('the worker to find the key busy', () => done.filter((d) => d.error?.code === ErrorCodes.KEY_BUSY).length >= 2, 15_000);
      await held.commit([key]);
      await untilSettled(t.emulator, destination, config);

      const rows = await rowsOf(table);
      expect([rows.count, rows.distinct]).toEqual([1, 1]);
      expect(rows.attempts.get(event?.id as string)).toEqual([0]);
      expect(runsIn(runsFile)).toEqual([]);
      const outcomes = done.map((d) => d.outcome);
      expect(outcomes.at(-1)).toBe('duplicate');
      expect(new Set(outcomes.slice(0, -1))).toEqual(new Set(['failed']));
      // Busy runs are not the handler's failures: no attempt charged, never dead-lettered.
      for (const d of done) expect(d.attempt).toBe(1);
      expect(deadLetters(join(dir, 'dead-letter.jsonl'))).toEqual([]);
    });

    it('two replicas race for an event whose first transaction outlives its lease: exactly one commit wins', async () => {
      const dir = tempDir('tx-race');
      const table = await effectTable();
      const runsFile = join(dir, 'runs.log');
      const prefix = `tx-${randomUUID()}`;
      const destination = await createConsumer(t.emulator);
      // The held event's first run keeps a statement going on the server past its lease (the worker
      // closes the connection at the deadline, the server holds the lock until the statement timeout):
      // its retry, a deferred run taken by either replica, meets that transaction.
      const [heldEvent] = appendBehave(
        t.emulator,
        1,
        () => ({ table, behaviour: 'hold-once', waitMs: 6_000, runsFile }),
        () => 'held',
        'tx.single',
      );
      const rest = appendBehave(
        t.emulator,
        20,
        () => ({ table, runsFile }),
        (i) => `r-${i}`,
        'tx.single',
      );
      const config = txConfig(destination, dir, prefix, { visibilitySeconds: 2, limit: 5 });
      const a = await start(config);
      const b = await start({ ...config, workerIdPrefix: `w-${randomUUID().slice(0, 8)}` });
      await untilSettled(t.emulator, destination, config, 30_000);

      const rows = await rowsOf(table);
      expect([rows.count, rows.distinct]).toEqual([21, 21]);
      expect(rows.ids).toEqual(sorted([heldEvent, ...rest].map((e) => e?.id)));
      // The winner is a later run (the first one's failure at the deadline counted): the first never committed.
      expect(rows.attempts.get(heldEvent?.id as string)).toEqual([2]);
      const held = [...a.done, ...b.done].filter((d) => d.event.id === heldEvent?.id);
      expect(held.filter((d) => d.outcome === 'ok')).toHaveLength(1);
      expect(held.filter((d) => d.error?.code === ErrorCodes.HANDLER_TIMEOUT)).toHaveLength(1);
      // The runs that met the first transaction, or found the event done, never applied it.
      const met = held.filter((d) => d.error?.code === ErrorCodes.KEY_BUSY || d.outcome === 'duplicate');
      expect(met.length, `outcomes of the held event: ${held.map((d) => d.error?.code ?? d.outcome).join(', ')}`).toBeGreaterThan(0);
    });
  });
}
