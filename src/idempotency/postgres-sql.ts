/**
 * SQL of the PostgreSQL store (documented in docs/stores.md). Times come from the database clock
 * (`now()`), so workers with skewed clocks agree on when a claim or done mark expires.
 */
export const TABLE = 'durable_worker_idempotency';

/** Run under an advisory lock: concurrent `CREATE TABLE IF NOT EXISTS` can race on pg_type. */
export const SCHEMA_LOCK_ID = 0x64775f69; // "dw_i"

/**
 * A row's claim or done mark expires at `expires_at`; its failure history (`failures` > 0) at
 * `failures_expire_at`, later. A history whose claim was dropped stays a `claimed` row with no
 * owner and an expired claim: any owner may claim it, and the sweep keeps it until the history
 * expires too.
 */
export const CREATE_SCHEMA = `
CREATE TABLE IF NOT EXISTS ${TABLE} (
  prefix             text        NOT NULL,
  key                text        NOT NULL,
  state              text        NOT NULL CHECK (state IN ('claimed', 'done')),
  owner              text,
  expires_at         timestamptz NOT NULL,
  failures           integer     NOT NULL DEFAULT 0,
  retry_at           timestamptz,
  first_failed_at    timestamptz,
  last_failed_at     timestamptz,
  failures_expire_at timestamptz,
  PRIMARY KEY (prefix, key)
);
CREATE INDEX IF NOT EXISTS ${TABLE}_expires_at ON ${TABLE} (expires_at);
`;

/** Whether the table predates failure histories (then MIGRATE_FAILURES runs); one row when it does. */
export const NEEDS_FAILURES_MIGRATION = `
SELECT 1 FROM pg_attribute
WHERE attrelid = to_regclass('${TABLE}') AND attnum > 0 AND NOT attisdropped
HAVING count(*) FILTER (WHERE attname = 'failures_expire_at') = 0
`;

/**
 * Adds the failure history's columns to a table created before them. Metadata only on PostgreSQL
 * 11 and later (nullable columns, and a constant default, need no table rewrite), so it holds the
 * table's lock for an instant; the lock timeout makes it give up, rather than queue every claim
 * behind it, when a long transaction holds the table (the open then fails and can be retried).
 */
export const MIGRATE_FAILURES = `
SET LOCAL lock_timeout = '5s';
ALTER TABLE ${TABLE}
  ADD COLUMN IF NOT EXISTS failures           integer NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS retry_at           timestamptz,
  ADD COLUMN IF NOT EXISTS first_failed_at    timestamptz,
  ADD COLUMN IF NOT EXISTS last_failed_at     timestamptz,
  ADD COLUMN IF NOT EXISTS failures_expire_at timestamptz;
`;

/**
 * A key is free for the claimant when nothing live holds it: no row, an expired row, or the
 * claimant's own claim (same owner re-claims). Repeated three times below because DO UPDATE can
 * only see the conflicting row (t) and the proposed one (EXCLUDED).
 */
const CLAIMABLE = `(t.expires_at <= now() OR (t.state = 'claimed' AND t.owner = EXCLUDED.owner))`;

/** The conflicting row is a done mark that still counts. */
const DONE_LIVE = `(t.state = 'done' AND t.expires_at > now())`;

/** The conflicting row is a live claim of an owner other than the one recording ($5). */
const OTHERS_CLAIM = `(t.state = 'claimed' AND t.expires_at > now() AND t.owner IS DISTINCT FROM $5)`;

/** The conflicting row holds a failure history that counts: not done, not expired. */
const LIVE_HISTORY = `(t.state = 'claimed' AND t.failures > 0 AND t.failures_expire_at > now())`;

/** Epoch ms of a timestamptz, as text. */
const ms = (column: string) => `round(extract(epoch FROM ${column}) * 1000)::bigint`;

/**
 * $1 prefix, $2 keys (distinct), $3 owner, $4 claim TTL in ms. One statement for the batch.
 *
 * Every key gets a row back: inserted (new), or updated by DO UPDATE. DO UPDATE always fires, so
 * a key that is not claimable is "updated" to its own values: that locks the row and, crucially,
 * RETURNING then shows the latest committed version of it — also a row another transaction
 * inserted after our snapshot was taken, which a separate SELECT in this statement would not see.
 * Classification is therefore race-free: two claimants of a new key serialise on the unique
 * index, the second one finds the first's live claim and answers busy. The price is a dead tuple
 * for each done/busy key (duplicates are rare). Keys are sorted (bytewise: any total order will do, and
 * "C" skips the locale's costly collation) so that overlapping batches lock rows in the same order
 * and cannot deadlock.
 */
export const CLAIM = `
INSERT INTO ${TABLE} AS t (prefix, key, state, owner, expires_at)
SELECT $1, k, 'claimed', $3, now() + $4::float8 * interval '1 millisecond'
FROM unnest($2::text[]) AS k
ORDER BY k COLLATE "C"
ON CONFLICT (prefix, key) DO UPDATE SET
  state      = CASE WHEN ${CLAIMABLE} THEN 'claimed'            ELSE t.state      END,
  owner      = CASE WHEN ${CLAIMABLE} THEN EXCLUDED.owner      ELSE t.owner      END,
  expires_at = CASE WHEN ${CLAIMABLE} THEN EXCLUDED.expires_at ELSE t.expires_at END,
  failures   = CASE WHEN ${LIVE_HISTORY} THEN t.failures ELSE 0 END
RETURNING key, CASE WHEN state = 'done' THEN 'done' WHEN owner = $3 THEN 'new' ELSE 'busy' END AS claim_state,
  CASE WHEN state = 'claimed' AND failures > 0
    THEN failures || ':' || ${ms('retry_at')} || ':' || ${ms('first_failed_at')} || ':' || ${ms('last_failed_at')} END AS history
`;

/**
 * $1 prefix, $2 keys, $3 failedAtMs per key, $4 retryAtMs per key, $5 owner, $6 done TTL in ms.
 * A key given twice counts twice (grouped first: one statement may update a row only once). A
 * live done mark is left as it is (counted 0); an expired one is replaced by the history. The
 * owner's claim is dropped by expiring it now; another owner's claim stays. The upsert takes the
 * row lock as CLAIM does, so a failure and a claim of one key serialise: the claim answers the
 * history with the count as it is after the failure, or the failure counts on top of the claim.
 */
export const RECORD_FAILURES = `
INSERT INTO ${TABLE} AS t (prefix, key, state, owner, expires_at, failures, retry_at, first_failed_at, last_failed_at, failures_expire_at)
SELECT $1, e.k, 'claimed', NULL, now(), e.runs,
  to_timestamp(e.retry_ms / 1000.0), to_timestamp(e.first_ms / 1000.0), to_timestamp(e.last_ms / 1000.0),
  now() + $6::float8 * interval '1 millisecond'
FROM (
  SELECT k, count(*)::int AS runs, min(f) AS first_ms, max(f) AS last_ms, max(r) AS retry_ms
  FROM unnest($2::text[], $3::float8[], $4::float8[]) AS u(k, f, r)
  GROUP BY k
) AS e
ORDER BY e.k COLLATE "C"
ON CONFLICT (prefix, key) DO UPDATE SET
  failures           = CASE WHEN ${DONE_LIVE} THEN t.failures WHEN ${LIVE_HISTORY} THEN t.failures + EXCLUDED.failures ELSE EXCLUDED.failures END,
  first_failed_at    = CASE WHEN ${DONE_LIVE} THEN t.first_failed_at WHEN ${LIVE_HISTORY} THEN t.first_failed_at ELSE EXCLUDED.first_failed_at END,
  retry_at           = CASE WHEN ${DONE_LIVE} THEN t.retry_at ELSE EXCLUDED.retry_at END,
  last_failed_at     = CASE WHEN ${DONE_LIVE} THEN t.last_failed_at ELSE EXCLUDED.last_failed_at END,
  failures_expire_at = CASE WHEN ${DONE_LIVE} THEN t.failures_expire_at ELSE EXCLUDED.failures_expire_at END,
  state              = CASE WHEN ${DONE_LIVE} THEN t.state ELSE 'claimed' END,
  owner              = CASE WHEN ${DONE_LIVE} OR ${OTHERS_CLAIM} THEN t.owner ELSE NULL END,
  expires_at         = CASE WHEN ${DONE_LIVE} OR ${OTHERS_CLAIM} THEN t.expires_at ELSE now() END
RETURNING key, CASE WHEN state = 'done' THEN 0 ELSE failures END AS failures
`;

/**
 * A done mark of each key: it replaces any claim and failure history. `prefix`, `keys` (a text[]
 * expression, distinct keys) and `ttlMs` are SQL expressions: parameters for the store, literals in
 * a transaction's one-round-trip commit (postgres-effects-sql.ts), where `keys` may be one text
 * expression instead (`oneKey`: no unnest and no sort to plan) and `guard` a condition checked
 * once before any mark is written.
 */
export function markDoneSql(prefix: string, keys: string, ttlMs: string, options: { oneKey?: boolean; guard?: string } = {}): string {
  const from = options.oneKey === true ? '' : `\nFROM unnest(${keys}) AS k`;
  const where = options.guard === undefined ? '' : `\nWHERE ${options.guard}`;
  const order = options.oneKey === true ? '' : `\nORDER BY k COLLATE "C"`;
  return `
INSERT INTO ${TABLE} AS t (prefix, key, state, owner, expires_at)
SELECT ${prefix}, ${options.oneKey === true ? keys : 'k'}, 'done', NULL, now() + ${ttlMs}::float8 * interval '1 millisecond'${from}${where}${order}
ON CONFLICT (prefix, key) DO UPDATE SET state = 'done', owner = NULL, expires_at = EXCLUDED.expires_at, failures = 0
`;
}

/** $1 prefix, $2 keys (distinct), $3 done TTL in ms. */
export const MARK_DONE = markDoneSql('$1', '$2::text[]', '$3');

/**
 * $1 prefix, $2 keys (distinct), $3 done TTL in ms, $4 the dead-letter mark's key prefix
 * (key.ts, deadLetteredKey). The done mark of each key whose mark does not count yet, then the
 * dead-letter mark of those alone: a key another worker applied meanwhile keeps its mark as it is.
 * DO UPDATE reads the latest committed row (waiting for a transaction that holds it), so a commit
 * that lands first is seen.
 */
export const MARK_DEAD_LETTERED = `
WITH marked AS (
  INSERT INTO ${TABLE} AS t (prefix, key, state, owner, expires_at)
  SELECT $1, k, 'done', NULL, now() + $3::float8 * interval '1 millisecond'
  FROM unnest($2::text[]) AS k
  ORDER BY k COLLATE "C"
  ON CONFLICT (prefix, key) DO UPDATE SET state = 'done', owner = NULL, expires_at = EXCLUDED.expires_at, failures = 0
  WHERE NOT ${DONE_LIVE}
  RETURNING key
)
INSERT INTO ${TABLE} AS t (prefix, key, state, owner, expires_at)
SELECT $1, $4 || m.key, 'done', NULL, now() + $3::float8 * interval '1 millisecond'
FROM marked AS m
ORDER BY $4 || m.key COLLATE "C"
ON CONFLICT (prefix, key) DO UPDATE SET state = 'done', owner = NULL, expires_at = EXCLUDED.expires_at, failures = 0
`;

/**
 * The keys of `keys` (a text[] expression, or one text expression with `oneKey`) whose done mark
 * counts (as CLAIM reads `done`); `prefix` an expression. Several keys are looked up one by one
 * in the primary key (LIMIT keeps the planner from turning the lookups into a join): with
 * `key = ANY(...)` a prefix the statistics think small (a new deployment's) was scanned whole,
 * each key a filter, at a cost that grew with every event done under it.
 */
export function readDoneSql(prefix: string, keys: string, oneKey = false): string {
  if (oneKey) return `SELECT t.key FROM ${TABLE} AS t WHERE t.prefix = ${prefix} AND t.key = ${keys} AND ${DONE_LIVE}`;
  return `SELECT k.key FROM unnest(${keys}) AS k(key), LATERAL (SELECT 1 FROM ${TABLE} AS t WHERE t.prefix = ${prefix} AND t.key = k.key AND ${DONE_LIVE} LIMIT 1) AS done`;
}

/**
 * $1 prefix, $2 keys, $3 owner. Only the owner's claims go; rows are locked in key order. A row
 * with a live failure history stays, its claim expired now (as RECORD_FAILURES leaves it).
 */
export const RELEASE = `
WITH mine AS (
  SELECT key, (failures > 0 AND failures_expire_at > now()) AS keep FROM ${TABLE}
  WHERE prefix = $1 AND key = ANY($2::text[]) AND state = 'claimed' AND owner = $3
  ORDER BY key COLLATE "C"
  FOR UPDATE
), dropped AS (
  DELETE FROM ${TABLE} AS t USING mine
  WHERE t.prefix = $1 AND t.key = mine.key AND NOT mine.keep
)
UPDATE ${TABLE} AS t SET owner = NULL, expires_at = now() FROM mine
WHERE t.prefix = $1 AND t.key = mine.key AND mine.keep
`;

/**
 * Expired claims and done marks, whatever their prefix (expired rows mean nothing to anyone), in
 * bounded sweeps so one sweep never holds many row locks; SKIP LOCKED leaves rows a claim is
 * taking over right now. A row whose failure history is live stays.
 */
export const DELETE_EXPIRED = `
DELETE FROM ${TABLE} WHERE ctid IN (
  SELECT ctid FROM ${TABLE}
  WHERE expires_at <= now() AND (failures = 0 OR state = 'done' OR failures_expire_at <= now())
  LIMIT $1 FOR UPDATE SKIP LOCKED
)
`;
