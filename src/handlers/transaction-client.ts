/**
 * `ctx.tx` of a transactional handler: the part of a `pg` client a handler needs, typed as pg's own
 * `query` so `ctx.tx.query(text, values)` returns the same result. Declared here rather than taken
 * from `@types/pg`, so that the package's types need no `@types/pg` in the user's project; a
 * `pg.PoolClient` fits it as it is.
 */

import { TransactionError } from '../errors.js';

/** A row as pg returns it: column name to value (pg's `QueryResultRow`). */
export interface TransactionRow {
  // `any` as in pg: a row's columns are whatever the query selected, read without a cast.
  [column: string]: any;
}

/** One column of a result (pg's `FieldDef`, the fields a handler may read). */
export interface TransactionField {
  name: string;
  /** The column's type OID. */
  dataTypeID: number;
}

/** What a query resolves with (pg's `QueryResult`). */
export interface TransactionQueryResult<R extends TransactionRow = TransactionRow> {
  /** `INSERT`, `UPDATE`, `SELECT`... */
  command: string;
  /** Rows written or returned; null for a command that counts none. */
  rowCount: number | null;
  rows: R[];
  fields: TransactionField[];
}

/** A query with options, as pg takes it: `name` makes it a prepared statement of the connection. */
export interface TransactionQueryConfig {
  text: string;
  values?: readonly unknown[];
  name?: string;
}

/**
 * A `pg` client inside the worker's open transaction. Valid only until the handler's call ends:
 * later queries reject. Its statements commit together with the event's done mark, or not at all;
 * so it must not end the transaction itself (`BEGIN`, `COMMIT`, `ROLLBACK` reject; a `SAVEPOINT`
 * and `ROLLBACK TO SAVEPOINT` are fine). A transaction ended some other way is found at the commit:
 * the call fails with DW_ERR_TRANSACTION and nothing is marked done.
 */
export interface TransactionClient {
  // pg's default row type: columns untyped unless the caller names R (`query<{ id: string }>(...)`).
  query<R extends TransactionRow = any>(text: string, values?: readonly unknown[]): Promise<TransactionQueryResult<R>>;
  query<R extends TransactionRow = any>(config: TransactionQueryConfig): Promise<TransactionQueryResult<R>>;
}

/** Where a {@link TransactionView} sends its statements: pg's `client.query`, or the test kit's adapter. */
export type TransactionQuery = (textOrConfig: string | TransactionQueryConfig, values?: readonly unknown[]) => Promise<TransactionQueryResult>;

/**
 * Statements that end or restart a transaction; `ROLLBACK TO [SAVEPOINT]` and `RELEASE` only end a
 * savepoint. Read at the start of a statement text, after any comments: a quick, clear refusal of
 * the plain cases. What it cannot see (a COMMIT after another statement in one text, for one) the
 * commit catches: it writes the done marks only in the transaction the worker opened
 * (postgres-effects-sql.ts, commitEffects).
 */
const ENDS_TRANSACTION =
  /^(?:\s|\/\*[\s\S]*?\*\/|--[^\n]*(?:\n|$))*(?:begin|start\s+transaction|commit|end|abort|prepare\s+transaction|rollback(?!\s+(?:(?:work|transaction)\s+)?to\b))\b/i;

/**
 * The `ctx.tx` a handler gets: forwards `query` to the transaction's connection until `close`, then
 * rejects. A handler that forgot to await a query, or keeps the client past its call, would
 * otherwise write into whatever transaction the pooled connection runs next.
 */
export class TransactionView implements TransactionClient {
  #query: TransactionQuery | undefined;
  #closedBecause = '';

  constructor(query: TransactionQuery) {
    this.#query = query;
  }

  query<R extends TransactionRow = any>(text: string, values?: readonly unknown[]): Promise<TransactionQueryResult<R>>;
  query<R extends TransactionRow = any>(config: TransactionQueryConfig): Promise<TransactionQueryResult<R>>;
  query(textOrConfig: string | TransactionQueryConfig, values?: readonly unknown[]): Promise<TransactionQueryResult> {
    const query = this.#query;
    if (query === undefined) return Promise.reject(new TransactionError(`ctx.tx cannot be used after its handler call ended (${this.#closedBecause})`));
    const text = typeof textOrConfig === 'string' ? textOrConfig : textOrConfig?.text;
    if (typeof text === 'string' && ENDS_TRANSACTION.test(text)) {
      return Promise.reject(
        new TransactionError(
          `ctx.tx: the worker commits or rolls back the handler's transaction itself (it writes the done mark in it); got ${JSON.stringify(text.trim().slice(0, 40))}. Use SAVEPOINT / ROLLBACK TO SAVEPOINT for a partial undo`,
        ),
      );
    }
    return query(textOrConfig, values);
  }

  /** Later queries reject, naming `because` (committed, rolled back, aborted at the deadline...). */
  close(because: string): void {
    this.#query = undefined;
    this.#closedBecause = because;
  }
}
