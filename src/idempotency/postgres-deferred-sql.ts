/**
 * SQL of the PostgreSQL store's deferred runs (postgres-deferred.ts runs it; docs/stores.md,
 * "Deferred runs"). The database clock decides only whether a done mark still counts, as in
 * postgres-sql.ts.
 */
import { TABLE as CLAIMS } from './postgres-sql.js';

const TABLE = 'durable_worker_deferred';

/**
 * Deferred runs, one row per (prefix, key). `chain` is `bytea`: a chain is `<handler>\0<subject>`
 * and `text` cannot hold a zero byte; bytea compares bytewise, as the other stores do, and a chain
 * starts with its handler, so ordering by chain orders by handler first and one handler's chains
 * are a range of the chain index. Stream order within a chain is `length(sequence), sequence`.
 * Times are the worker's epoch ms, as given (the store's clock is not involved).
 *
 * `head` marks the first run of each chain, kept by `defer` and `remove` in their transaction, so
 * `due` and the next due time read the heads alone through a partial index: a range scan as long
 * as the answer, where finding heads at read time (DISTINCT ON chain) visits every chain each time
 * the worker looks for due runs, however few are due.
 */
export const DEFERRED_SCHEMA = `
CREATE TABLE IF NOT EXISTS ${TABLE} (
  prefix         text             NOT NULL,
  key            text             NOT NULL,
  handler        text             NOT NULL,
  chain          bytea            NOT NULL,
  sequence       text             NOT NULL,
  event          text             NOT NULL,
  retry_at_ms    double precision NOT NULL,
  deferred_at_ms double precision NOT NULL,
  reason         text             NOT NULL,
  head           boolean          NOT NULL DEFAULT false,
  PRIMARY KEY (prefix, key)
);
CREATE INDEX IF NOT EXISTS ${TABLE}_chain ON ${TABLE} (prefix, chain, length(sequence), sequence COLLATE "C");
CREATE INDEX IF NOT EXISTS ${TABLE}_due ON ${TABLE} (prefix, retry_at_ms) WHERE head;
`;

/**
 * Whether DEFERRED_SCHEMA must run (one row when it must). Looked for first because CREATE INDEX
 * takes a share lock on its table even when the index exists: a store opening while another
 * process defers runs would then wait on (and could deadlock with) that transaction.
 */
export const NEEDS_DEFERRED_SCHEMA = `SELECT 1 WHERE to_regclass('${TABLE}_due') IS NULL`;

const COLUMNS = 'key, handler, chain, sequence, event, retry_at_ms, deferred_at_ms, reason';
const CHAIN_ORDER = 'chain, length(sequence), sequence COLLATE "C"';

/**
 * A transaction that changes a chain's runs first takes the chain's advisory lock (transaction
 * level; the one-bigint key space, apart from the two-integer locks of transactional runs), in lock
 * order so that two cannot deadlock: the head is then recomputed by a statement whose snapshot
 * sees every run committed before, so two transactions adding to one chain never both leave their
 * own run as its head. $1 prefix, $2 chains (hex).
 */
export const LOCK_CHAINS = `
SELECT count(pg_advisory_xact_lock(id)) FROM (
  SELECT DISTINCT hashtextextended(h, hashtextextended($1, 0)) AS id FROM unnest($2::text[]) AS h ORDER BY 1
) AS l`;

/** $1 prefix, $2 keys. As LOCK_CHAINS, for the chains of deferred keys. */
export const LOCK_CHAINS_OF_KEYS = `
SELECT count(pg_advisory_xact_lock(id)) FROM (
  SELECT DISTINCT hashtextextended(encode(chain, 'hex'), hashtextextended($1, 0)) AS id FROM ${TABLE}
  WHERE prefix = $1 AND key = ANY($2::text[]) ORDER BY 1
) AS l`;

/**
 * $1 prefix, $2 keys (distinct), $3 handlers, $4 chains (hex), $5 sequences, $6 events (JSON),
 * $7 retryAtMs, $8 deferredAtMs, $9 reasons, $10 owner. The owner's claims go as RELEASE drops them
 * (a row with a live failure history stays, its claim expired); a key whose done mark counts is
 * left out; a key already deferred takes the new retry time and reason.
 */
export const DEFER = `
WITH mine AS (
  SELECT key, (failures > 0 AND failures_expire_at > now()) AS keep FROM ${CLAIMS}
  WHERE prefix = $1 AND key = ANY($2::text[]) AND state = 'claimed' AND owner = $10
  ORDER BY key COLLATE "C"
  FOR UPDATE
), dropped AS (
  DELETE FROM ${CLAIMS} AS t USING mine WHERE t.prefix = $1 AND t.key = mine.key AND NOT mine.keep
), expired AS (
  UPDATE ${CLAIMS} AS t SET owner = NULL, expires_at = now() FROM mine WHERE t.prefix = $1 AND t.key = mine.key AND mine.keep
)
INSERT INTO ${TABLE} AS d (prefix, ${COLUMNS})
SELECT $1, r.key, r.handler, decode(r.chain, 'hex'), r.sequence, r.event, r.retry_at_ms, r.deferred_at_ms, r.reason
FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::float8[], $8::float8[], $9::text[])
  AS r(key, handler, chain, sequence, event, retry_at_ms, deferred_at_ms, reason)
WHERE NOT EXISTS (
  SELECT 1 FROM ${CLAIMS} AS t WHERE t.prefix = $1 AND t.key = r.key AND t.state = 'done' AND t.expires_at > now()
)
ORDER BY r.key COLLATE "C"
ON CONFLICT (prefix, key) DO UPDATE SET retry_at_ms = EXCLUDED.retry_at_ms, reason = EXCLUDED.reason
`;

/**
 * $1 prefix, $2 chains (hex): each chain's head flag on its first run only. Each chain's first run
 * is one probe of the chain index, and the runs to flip are those of the chains given. A DISTINCT ON
 * over the prefix let the planner, for a prefix its statistics do not know yet (a fresh deployment),
 * read and sort every run under it twice per call, under the chains' locks: with many runs deferred
 * at once that serialised the store until its statistics caught up.
 */
export const PROMOTE_HEADS = `
UPDATE ${TABLE} AS d SET head = (d.key = h.key)
FROM (
  SELECT c.chain, (
    SELECT f.key FROM ${TABLE} AS f WHERE f.prefix = $1 AND f.chain = c.chain
    ORDER BY length(f.sequence), f.sequence COLLATE "C" LIMIT 1
  ) AS key
  FROM (SELECT DISTINCT decode(x, 'hex') AS chain FROM unnest($2::text[]) AS x) AS c
) AS h
WHERE d.prefix = $1 AND d.chain = ANY(ARRAY(SELECT decode(x, 'hex') FROM unnest($2::text[]) AS x))
  AND d.chain = h.chain AND d.head <> (d.key = h.key)
`;

/** $1 prefix, $2 keys. The chains (hex) of the removed runs. */
export const REMOVE = `DELETE FROM ${TABLE} WHERE prefix = $1 AND key = ANY($2::text[]) RETURNING encode(chain, 'hex') AS chain`;

/** $1 prefix, $2 now ms, $3 handlers skipped, $4 limit. */
export const DUE = `
SELECT ${COLUMNS} FROM ${TABLE}
WHERE prefix = $1 AND head AND retry_at_ms <= $2 AND handler <> ALL($3::text[])
ORDER BY retry_at_ms, chain LIMIT $4`;

export const NEXT_DUE = `SELECT min(retry_at_ms) AS at FROM ${TABLE} WHERE prefix = $1 AND head`;

export const CHAINS_WITH_RUNS = `
SELECT DISTINCT encode(chain, 'hex') AS chain FROM ${TABLE}
WHERE prefix = $1 AND chain IN (SELECT decode(c, 'hex') FROM unnest($2::text[]) AS c)`;

export const RESCHEDULE = `UPDATE ${TABLE} SET retry_at_ms = $3 WHERE prefix = $1 AND key = $2`;

export const LIST = `SELECT ${COLUMNS} FROM ${TABLE} WHERE prefix = $1 ORDER BY ${CHAIN_ORDER} LIMIT $2`;

/** $2, $3: the handler's chains, [handler\0, handler\x01). */
export const LIST_OF = `
SELECT ${COLUMNS} FROM ${TABLE} WHERE prefix = $1 AND chain >= $2::bytea AND chain < $3::bytea
ORDER BY ${CHAIN_ORDER} LIMIT $4`;

export const GET = `SELECT ${COLUMNS} FROM ${TABLE} WHERE prefix = $1 AND key = $2`;

export const STATS = `SELECT handler, count(*)::int AS count, min(deferred_at_ms) AS oldest FROM ${TABLE} WHERE prefix = $1 GROUP BY handler`;
