/**
 * SQL of a transactional handler's transaction (postgres-transactions.ts), in two round trips of
 * the worker's own: one opens the transaction, locks the keys and reads their done marks; one checks
 * that the transaction is still the one it opened, writes the done marks and commits. The simple
 * query protocol runs several statements in one round trip but takes no parameters, so keys and the
 * prefix go in as literals ({@link literal}); and it keeps no prepared statement, so a pooler in
 * transaction mode (PgBouncer) can hand the next transaction to any server connection.
 */
import { createHash } from 'node:crypto';
import { markDoneSql, readDoneSql } from './postgres-sql.js';

/**
 * The two int4 keys of a key's transaction-level advisory lock: the first 8 bytes of a SHA-256 of
 * the namespaced key. Every replica and thread must derive the same pair for a key, across versions
 * too (two versions run side by side during a rolling update), so this is part of the stored
 * format: never change it. Two keys that share a pair only make each other wait (busy), never
 * skip an effect.
 */
export function effectLockKey(prefix: string, key: string): [number, number] {
  const digest = createHash('sha256').update(prefix).update('\0').update(key).digest();
  return [digest.readInt32BE(0), digest.readInt32BE(4)];
}

/** The transaction-local setting that marks the worker's transaction: gone once that transaction ends, however it ended. */
const MARKER = 'dw.tx';

/**
 * `value` as a string literal, as libpq's PQescapeLiteral writes it: quotes doubled, and with a
 * backslash in it, backslashes doubled in an E'' literal, so it reads the same whatever
 * `standard_conforming_strings` says. A text value cannot hold a zero byte (the server refuses it).
 */
export function literal(value: string): string {
  const quoted = value.replaceAll("'", "''");
  return value.includes('\\') ? `E'${quoted.replaceAll('\\', '\\\\')}'` : `'${quoted}'`;
}

/** A text[] of literals. */
function textArray(values: readonly string[]): string {
  return values.length === 0 ? `'{}'::text[]` : `ARRAY[${values.map(literal).join(', ')}]::text[]`;
}

/**
 * `keys` as SQL: one key as a plain literal (most calls are one event's: its statements then
 * compare one value, with no array to unnest, sort or search), several as a text[].
 */
function keysSql(keys: readonly string[]): { keys: string; oneKey: boolean } {
  return keys.length === 1 ? { keys: literal(keys[0] as string), oneKey: true } : { keys: textArray(keys), oneKey: false };
}

/**
 * Opens the transaction, in one round trip. The server bounds how long it may sit idle or run one
 * statement, so a frozen or partitioned worker cannot hold the keys' locks (or the handler's row
 * locks) for ever; those bounds are transaction-local, never startup parameters (a pooler refuses
 * those). `marker` is set for the commit's check. Each key is then try-locked, never waited for: a key
 * another transaction holds answers false (busy), and try-locks cannot deadlock. The done marks are
 * read by a statement of their own, after the locks: under READ COMMITTED each statement reads a
 * snapshot taken when it starts, so it sees the done mark of the transaction that held a lock before
 * this one got it. Results: the locks' `held` (in `locks` order), then the `key` of each done key.
 */
export function beginEffects(
  locks: readonly (readonly [number, number])[],
  serverTimeoutMs: number,
  marker: string,
  prefix: string,
  keys: readonly string[],
  prepared = false,
): string {
  const ms = Math.max(1, Math.ceil(serverTimeoutMs));
  // set_config(..., true) is SET LOCAL as a function: the settings and the locks in one statement,
  // parsed and planned once (every statement of a simple query is, and these texts are never reused).
  const settings = `set_config('idle_in_transaction_session_timeout', '${ms}', true), set_config('statement_timeout', '${ms}', true), set_config('${MARKER}', ${literal(marker)}, true)`;
  if (locks.length === 0) return `BEGIN; SELECT ${settings}`;
  const calls = locks.map(([a, b]) => `pg_try_advisory_xact_lock(${a | 0}, ${b | 0})`);
  const read = keysSql(keys);
  const readDone = prepared
    ? `EXECUTE ${read.oneKey ? 'dw_tx_read1' : 'dw_tx_read'}(${literal(prefix)}, ${read.keys})`
    : readDoneSql(literal(prefix), read.keys, read.oneKey);
  return `BEGIN; SELECT ${settings}, ARRAY[${calls.join(', ')}] AS held; ${readDone}`;
}

/**
 * The SQLSTATE of a commit refused because the transaction is no longer the worker's: the check
 * divides by zero then (plain SQL, where a PL/pgSQL block that raises costs a compilation per commit).
 */
export const NOT_OURS = '22012';

/**
 * Commits the transaction with the done marks of `keys`, in one round trip, only if it is still the
 * one `beginEffects` opened: a handler that ended it through `ctx.tx` (a COMMIT hidden after a
 * comment or another statement, END, ABORT, COMMIT AND CHAIN, PREPARE TRANSACTION...) left no
 * marker (the setting is empty, or absent on another pooled server connection), and the check fails
 * ({@link NOT_OURS}) before any mark is written; the statements after it then do not run (an error
 * ends a multi-statement query, and rolls back its implicit transaction). The check is the marks'
 * own condition, evaluated once before their first row: one statement fewer to parse and run.
 */
export function commitEffects(marker: string, prefix: string, keys: readonly string[], doneTtlMs: number, prepared = false): string {
  if (keys.length === 0) return `SELECT ${ours(literal(marker))} AS worker_transaction; COMMIT`;
  const marked = keysSql(keys);
  const ttlMs = String(Number(doneTtlMs));
  if (prepared) return `EXECUTE ${marked.oneKey ? 'dw_tx_mark1' : 'dw_tx_mark'}(${literal(prefix)}, ${marked.keys}, ${ttlMs}, ${literal(marker)}); COMMIT`;
  return `${markDoneSql(literal(prefix), marked.keys, ttlMs, { oneKey: marked.oneKey, guard: ours(literal(marker)) })}; COMMIT`;
}

/** The check that the transaction is the worker's: divides by zero ({@link NOT_OURS}) when `marker` (SQL) is not its setting. */
function ours(marker: string): string {
  return `1 / (coalesce(current_setting('${MARKER}', true), '') = ${marker})::int = 1`;
}

/**
 * The done-mark read and the done marks of one key and of several, prepared (SQL PREPARE) by each
 * connection once: parsed and analyzed once per connection, and after a few runs planned once too,
 * where inline they cost PostgreSQL most of a transaction's own CPU. A session's, so never behind a
 * transaction pooler. Sent on its own, outside any transaction: preparing the marks' INSERT takes
 * the table's ROW EXCLUSIVE lock, which the transaction would then hold from its start (and a
 * starting worker's CREATE INDEX IF NOT EXISTS would wait for it).
 */
const PREPARE_EFFECTS = [
  `PREPARE dw_tx_read1 (text, text) AS ${readDoneSql('$1', '$2', true)}`,
  `PREPARE dw_tx_read (text, text[]) AS ${readDoneSql('$1', '$2')}`,
  `PREPARE dw_tx_mark1 (text, text, float8, text) AS ${markDoneSql('$1', '$2', '$3', { oneKey: true, guard: ours('$4') })}`,
  `PREPARE dw_tx_mark (text, text[], float8, text) AS ${markDoneSql('$1', '$2', '$3', { guard: ours('$4') })}`,
].join('; ');

/** Connections that prepared {@link PREPARE_EFFECTS}: pg's client objects, one per server connection. */
const preparedConnections = new WeakSet<object>();

/**
 * What `connection` must run before its first transaction when `keepsSessions` (no transaction
 * pooler): the PREPAREs, once; undefined after, or behind a pooler. Counted as done once asked: a
 * connection whose PREPARE failed is closed by its caller.
 */
export function prepareEffects(connection: object, keepsSessions: boolean): string | undefined {
  if (!keepsSessions || preparedConnections.has(connection)) return undefined;
  preparedConnections.add(connection);
  return PREPARE_EFFECTS;
}

/** Whether `connection` runs the prepared statements (it prepared them) or the inline texts. */
export function preparedOn(connection: object): boolean {
  return preparedConnections.has(connection);
}
