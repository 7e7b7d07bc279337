/**
 * SQL of the PostgreSQL store (documented in docs/stores.md). Times come from the database clock
 * (`now()`), so workers with skewed clocks agree on when a claim or done mark expires.
 */
export const TABLE = 'durable_worker_idempotency';

/** Run under an advisory lock: concurrent `CREATE TABLE IF NOT EXISTS` can race on pg_type. */
export const SCHEMA_LOCK_ID = 0x64775f69; // "dw_i"

export const CREATE_SCHEMA = `
CREATE TABLE IF NOT EXISTS ${TABLE} (
  prefix     text        NOT NULL,
  key        text        NOT NULL,
  state      text        NOT NULL CHECK (state IN ('claimed', 'done')),
  owner      text,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (prefix, key)
);
CREATE INDEX IF NOT EXISTS ${TABLE}_expires_at ON ${TABLE} (expires_at);
`;

/**
 * A key is free for the claimant when nothing live holds it: no row, an expired row, or the
 * claimant's own claim (same owner re-claims). Repeated three times below because DO UPDATE can
 * only see the conflicting row (t) and the proposed one (EXCLUDED).
 */
const CLAIMABLE = `(t.expires_at <= now() OR (t.state = 'claimed' AND t.owner = EXCLUDED.owner))`;

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
  expires_at = CASE WHEN ${CLAIMABLE} THEN EXCLUDED.expires_at ELSE t.expires_at END
RETURNING key, CASE WHEN state = 'done' THEN 'done' WHEN owner = $3 THEN 'new' ELSE 'busy' END AS claim_state
`;

/** $1 prefix, $2 keys (distinct), $3 done TTL in ms. A done mark replaces any claim. */
export const MARK_DONE = `
INSERT INTO ${TABLE} AS t (prefix, key, state, owner, expires_at)
SELECT $1, k, 'done', NULL, now() + $3::float8 * interval '1 millisecond'
FROM unnest($2::text[]) AS k
ORDER BY k COLLATE "C"
ON CONFLICT (prefix, key) DO UPDATE SET state = 'done', owner = NULL, expires_at = EXCLUDED.expires_at
`;

/** $1 prefix, $2 keys, $3 owner. Only the owner's claims go; rows are locked in key order. */
export const RELEASE = `
WITH mine AS (
  SELECT key FROM ${TABLE}
  WHERE prefix = $1 AND key = ANY($2::text[]) AND state = 'claimed' AND owner = $3
  ORDER BY key COLLATE "C"
  FOR UPDATE
)
DELETE FROM ${TABLE} AS t USING mine
WHERE t.prefix = $1 AND t.key = mine.key AND t.state = 'claimed' AND t.owner = $3
`;

/**
 * Expired claims and done marks, whatever their prefix (expired rows mean nothing to anyone), in
 * bounded sweeps so one sweep never holds many row locks; SKIP LOCKED leaves rows a claim is
 * taking over right now.
 */
export const DELETE_EXPIRED = `
DELETE FROM ${TABLE} WHERE ctid IN (
  SELECT ctid FROM ${TABLE} WHERE expires_at <= now() LIMIT $1 FOR UPDATE SKIP LOCKED
)
`;
