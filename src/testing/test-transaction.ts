import { ErrorCodes } from '../errors.js';
import type { HandlerContext } from '../handlers/define.js';
import type { LoadedHandler } from '../handlers/loader.js';
import { TransactionView, type TransactionQueryConfig, type TransactionQueryResult } from '../handlers/transaction-client.js';
import { toDispatchError } from '../dispatch/call-outcomes.js';
import type { CallOutcome } from '../dispatch/types.js';

/**
 * Where the test kit runs a transactional handler's transaction: anything with pg's
 * `query(text, values)`: a PGlite instance (`@electric-sql/pglite`: PostgreSQL in WebAssembly, no
 * server), a connected `pg.Client`, or a `pg.Pool` (one connection is taken for each call).
 */
export interface TestDatabase {
  // Any: PGlite and pg each declare their own parameter and result types.
  query(text: string, values?: any[]): Promise<unknown>;
}

/** The connection of one call: a pg Pool's client is given back after. */
interface TestConnection {
  query(text: string, values?: unknown[]): Promise<unknown>;
  release?(err?: Error | boolean): void;
}

/** A pg Pool hands out connections; PGlite and a pg Client are one. */
function isPool(database: TestDatabase): database is TestDatabase & { connect(): Promise<TestConnection> } {
  const candidate = database as { connect?: unknown; totalCount?: unknown; idleCount?: unknown };
  return typeof candidate.connect === 'function' && typeof candidate.totalCount === 'number' && typeof candidate.idleCount === 'number';
}

/** pg's result shape, from pg's own (kept as it is) or from PGlite's (`affectedRows`, no `rowCount` on some commands). */
function asResult(raw: unknown): TransactionQueryResult {
  const result = raw as { command?: string; rowCount?: number | null; affectedRows?: number; rows?: unknown[]; fields?: TransactionQueryResult['fields'] };
  if (typeof result.command === 'string' && result.rowCount !== undefined && Array.isArray(result.fields)) return result as TransactionQueryResult;
  return {
    command: result.command ?? '',
    rowCount: result.rowCount ?? result.affectedRows ?? (Array.isArray(result.rows) && result.rows.length > 0 ? result.rows.length : null),
    rows: (result.rows ?? []) as TransactionQueryResult['rows'],
    fields: result.fields ?? [],
  };
}

/** `ctx` with `tx`: the run's own ctx (its accessors read private state, so it is wrapped, not copied). */
function withTx(ctx: HandlerContext, tx: TransactionView): HandlerContext {
  return new Proxy(ctx, { get: (target, property) => (property === 'tx' ? tx : Reflect.get(target, property, target)) });
}

/** A call's outcome once its transaction ended: a failed event undoes the others' writes too. */
function afterRollback(outcome: CallOutcome): CallOutcome {
  if (outcome.status !== 'ok' || outcome.results === undefined) return outcome;
  const undone: CallOutcome = {
    status: 'failed',
    error: { message: 'rolled back with its call: another event of the call failed (runs again, no attempt counted)', code: ErrorCodes.ROLLED_BACK },
  };
  return { status: 'ok', results: outcome.results.map((result) => (result.status === 'ok' ? undone : result)) };
}

/**
 * Runs one call of a transactional handler as the worker does, on a test database: `BEGIN`, the
 * call with `ctx.tx`, then `COMMIT` when every event of the call is ok, else `ROLLBACK` (a batch
 * call's ok events then end failed with DW_ERR_ROLLED_BACK). No done mark is written: the test kit
 * involves no idempotency store. `call` starts synchronously (a fake clock's deadline is armed when
 * this returns): `BEGIN` is sent first and the handler's queries wait for it.
 */
export async function runInTestTransaction(
  loaded: LoadedHandler,
  database: TestDatabase,
  call: (handler: LoadedHandler) => Promise<CallOutcome>,
): Promise<CallOutcome> {
  let connection: TestConnection | undefined;
  const begun = (async () => {
    connection = isPool(database) ? await database.connect() : database;
    await connection.query('BEGIN');
    return connection;
  })();
  begun.catch(() => {});
  const view = new TransactionView(async (textOrConfig: string | TransactionQueryConfig, values?: readonly unknown[]) => {
    const open = await begun;
    const config = typeof textOrConfig === 'string' ? { text: textOrConfig, values } : textOrConfig;
    return asResult(await open.query(config.text, config.values === undefined ? undefined : [...config.values]));
  });
  // Closed the moment the run is aborted (deadline, timeout, shutdown), before the handler's own
  // abort listeners run: a handler that goes on must find its transaction gone, as in the worker.
  const txOf = (ctx: HandlerContext): HandlerContext => {
    ctx.signal.addEventListener('abort', () => view.close('its run was aborted'), { once: true });
    return withTx(ctx, view);
  };
  // The kit holds the transaction itself: the call runs the handler as a plain one.
  const handler: LoadedHandler = { ...loaded };
  delete handler.transactional;
  const { handle, batch } = loaded;
  if (handle !== undefined) handler.handle = (event, ctx) => handle(event, txOf(ctx));
  if (batch !== undefined) handler.batch = { ...batch, handleBatch: (events, ctx) => batch.handleBatch(events, txOf(ctx)) };

  let outcome = await call(handler);
  const commit = outcome.status === 'ok' && outcome.results === undefined;
  view.close(commit ? 'its transaction was committed' : 'its transaction was rolled back');
  let failed: unknown;
  try {
    const open = await begun;
    const ended = asResult(await open.query(commit ? 'COMMIT' : 'ROLLBACK'));
    // COMMIT of a transaction a failed statement aborted answers ROLLBACK, without an error.
    if (commit && ended.command !== 'COMMIT') throw new Error('the transaction was rolled back: a statement in it failed (the handler caught a query error?)');
  } catch (err) {
    failed = err;
  } finally {
    connection?.release?.(failed instanceof Error ? failed : undefined);
  }
  if (failed !== undefined && commit) return { status: 'failed', error: toDispatchError(failed) };
  if (!commit) outcome = afterRollback(outcome);
  return outcome;
}

/** `options.database` for a transactional handler (TypeError without one); undefined for the others. */
export function testDatabaseFor(caller: string, loaded: LoadedHandler, options: { database?: TestDatabase | undefined }): TestDatabase | undefined {
  if (loaded.transactional !== true) return undefined;
  const database = options.database;
  if (database === undefined || typeof database.query !== 'function') {
    throw new TypeError(`${caller}: this handler is transactional: give options.database for its ctx.tx (a PGlite instance, or a pg Client or Pool)`);
  }
  return database;
}
