import type { StoreQuery } from './query.js';

/**
 * The listing statement of the SQL adapters (SQLite and PostgreSQL share the table's shape:
 * `durable_worker_dead_letters (prefix, id, handler, event_type, reason, state, dead_lettered_at,
 * record)`), built from the filter so each given field is one indexed-column predicate.
 */
export const TABLE = 'durable_worker_dead_letters';

export type SqlValue = string | number | null;

export interface SqlDialect {
  /** Placeholder of the n-th parameter (1-based). */
  param(index: number): string;
  /** A time parameter as the column's type. */
  time(placeholder: string): string;
  /** The bound value of a time. */
  timeValue(ms: number): SqlValue;
  /** A text column in the order JS compares strings, so pages follow one order (see query.ts). */
  ordered(column: string): string;
}

export function listStatement(dialect: SqlDialect, query: StoreQuery, prefix: string | undefined): { sql: string; params: SqlValue[] } {
  const params: SqlValue[] = [];
  const bind = (value: SqlValue): string => {
    params.push(value);
    return dialect.param(params.length);
  };
  const where: string[] = [];
  if (prefix !== undefined) where.push(`prefix = ${bind(prefix)}`);
  if (query.handler !== undefined) where.push(`handler = ${bind(query.handler)}`);
  if (query.reason !== undefined) where.push(`reason = ${bind(query.reason)}`);
  if (query.state !== undefined) where.push(`state = ${bind(query.state)}`);
  if (query.type !== undefined && query.type !== '*') {
    // `prefix.*` matches the types that start with `prefix.`; the length is ours, not the user's text.
    const stem = query.type.endsWith('.*') ? query.type.slice(0, -1) : undefined;
    where.push(stem === undefined ? `event_type = ${bind(query.type)}` : `substr(event_type, 1, ${stem.length}) = ${bind(stem)}`);
  }
  if (query.since !== undefined) where.push(`dead_lettered_at >= ${dialect.time(bind(dialect.timeValue(query.since.getTime())))}`);
  if (query.until !== undefined) where.push(`dead_lettered_at < ${dialect.time(bind(dialect.timeValue(query.until.getTime())))}`);
  const order = `dead_lettered_at, ${dialect.ordered('prefix')}, ${dialect.ordered('id')}`;
  if (query.after !== undefined) {
    const { atMs, prefix: afterPrefix, id } = query.after;
    where.push(`(${order}) > (${dialect.time(bind(dialect.timeValue(atMs)))}, ${bind(afterPrefix)}, ${bind(id)})`);
  }
  const sql = `SELECT record FROM ${TABLE}${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY ${order} LIMIT ${bind(query.limit)}`;
  return { sql, params };
}
