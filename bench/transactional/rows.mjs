/**
 * The row every variant of bench/transactional writes per event, and the statements that write it
 * (plain JavaScript: the handlers load no TypeScript compiler, as users' built handlers do not).
 * Outside the handlers folders, so the loader does not take it for a handler.
 *
 * One row per event id; a second write of the same event adds to `writes` instead of adding a row,
 * so that the benchmark can tell an event applied twice (sum(writes) > count) from one lost. The
 * benchmark creates the table (bench/transactional/run.ts): no handler needs a setup for it.
 */
import pg from 'pg';

export const table = process.env.BENCH_TX_TABLE ?? '';
if (!/^[a-z_][a-z0-9_]{0,62}$/.test(table)) throw new Error(`BENCH_TX_TABLE must be a plain lower-case SQL identifier (got ${JSON.stringify(table)})`);

const UPSERT_ONE = `INSERT INTO ${table} (event_id, subject, n) VALUES ($1, $2, $3)
  ON CONFLICT (event_id) DO UPDATE SET writes = ${table}.writes + 1`;

const UPSERT_MANY = `INSERT INTO ${table} (event_id, subject, n)
  SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])
  ON CONFLICT (event_id) DO UPDATE SET writes = ${table}.writes + 1`;

/** One event: one statement. `db` is a pg Pool, Client or `ctx.tx`. */
export async function writeOne(db, event) {
  await db.query(UPSERT_ONE, [event.id, event.subject, event.data.n]);
}

/** A call's events: one statement whatever their number (a lease's event ids are distinct). */
export async function writeMany(db, events) {
  await db.query(UPSERT_MANY, [events.map((e) => e.id), events.map((e) => e.subject), events.map((e) => e.data.n)]);
}

/** The plain variants' own pool: one per process, or per handler thread with `--isolation thread`. */
export function openPool() {
  return new pg.Pool({
    connectionString: process.env.DATABASE_URL,
    max: Number(process.env.BENCH_TX_POOL_MAX ?? 8),
    application_name: 'bench handler pool',
    idleTimeoutMillis: 5_000,
    allowExitOnIdle: true,
  });
}
