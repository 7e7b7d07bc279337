/**
 * SQL of the PostgreSQL store's permits (postgres-permits.ts; permits.ts says what they are). A rate
 * logs its starts (one row per start in its window), a concurrency limit its permits (one row each,
 * with its expiry). Time is the database's (clock_timestamp), so replicas share one window whatever
 * their own clocks say.
 */
const STARTS = 'durable_worker_limit_starts';
const PERMITS = 'durable_worker_limit_permits';
const TAKE_FUNCTION = 'durable_worker_take_permits_v2';

/**
 * One function call takes every ask of a batch (one round trip, one transaction). It first locks
 * every limit the call touches, in one order (advisory transaction locks on the limit's id), so two
 * replicas asking for the same limits queue rather than both seeing the last free place, and two
 * calls over the same limits in another order cannot deadlock. Then each ask in turn: every check
 * passes (the window holds fewer than max starts, fewer than max permits are unexpired) and each
 * records the ask's token, or none does and the answer says how long to wait.
 * `p_asks`: `[{ "t": token, "ttl": ms, "c": [[kind 'r'|'c', id, max, perMs], ...] }, ...]`.
 * Answer: `[[granted 1|0, waitMs, refusedBy -1|0 rate|1 concurrency], ...]`.
 */
export const PERMITS_SCHEMA = `
CREATE TABLE IF NOT EXISTS ${STARTS} (
  prefix text   NOT NULL,
  id     text   NOT NULL,
  token  text   NOT NULL,
  at_ms  bigint NOT NULL,
  PRIMARY KEY (prefix, id, token)
);
CREATE INDEX IF NOT EXISTS ${STARTS}_at ON ${STARTS} (prefix, id, at_ms);
CREATE TABLE IF NOT EXISTS ${PERMITS} (
  prefix     text   NOT NULL,
  id         text   NOT NULL,
  token      text   NOT NULL,
  expires_ms bigint NOT NULL,
  PRIMARY KEY (prefix, id, token)
);
CREATE OR REPLACE FUNCTION ${TAKE_FUNCTION}(p_prefix text, p_retry_ms bigint, p_asks jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $fn$
DECLARE
  now_ms  bigint;
  lock_id text;
  ask     jsonb;
  chk     jsonb;
  answers jsonb := '[]'::jsonb;
  wait_ms bigint;
  refused int;
  used    bigint;
  edge    bigint;
BEGIN
  FOR lock_id IN SELECT DISTINCT (c ->> 0) || ':' || (c ->> 1) FROM jsonb_array_elements(p_asks) a, jsonb_array_elements(a -> 'c') c ORDER BY 1 LOOP
    PERFORM pg_advisory_xact_lock(hashtextextended(p_prefix || ':' || lock_id, 1685546860));
  END LOOP;
  -- Read after the locks: a call that waited for another's must not log its starts at the time it
  -- began waiting (they would leave the window early).
  now_ms := floor(extract(epoch FROM clock_timestamp()) * 1000);
  FOR ask IN SELECT value FROM jsonb_array_elements(p_asks) LOOP
    refused := -1;
    wait_ms := 0;
    FOR chk IN SELECT value FROM jsonb_array_elements(ask -> 'c') LOOP
      EXIT WHEN refused >= 0;
      IF chk ->> 0 = 'r' THEN
        DELETE FROM ${STARTS} WHERE prefix = p_prefix AND id = chk ->> 1 AND at_ms <= now_ms - (chk ->> 3)::bigint;
        SELECT count(*) INTO used FROM ${STARTS} WHERE prefix = p_prefix AND id = chk ->> 1;
        IF used + 1 > (chk ->> 2)::bigint THEN
          -- The window frees a place when its oldest start leaves it; more than one must leave
          -- when an adaptive max came down.
          SELECT at_ms INTO edge FROM ${STARTS} WHERE prefix = p_prefix AND id = chk ->> 1
            ORDER BY at_ms OFFSET used - (chk ->> 2)::bigint LIMIT 1;
          wait_ms := greatest(1, edge + (chk ->> 3)::bigint - now_ms);
          refused := 0;
        END IF;
      ELSE
        DELETE FROM ${PERMITS} WHERE prefix = p_prefix AND id = chk ->> 1 AND expires_ms <= now_ms;
        SELECT count(*), min(expires_ms) INTO used, edge FROM ${PERMITS} WHERE prefix = p_prefix AND id = chk ->> 1;
        IF used >= (chk ->> 2)::bigint THEN
          wait_ms := greatest(1, least(p_retry_ms, edge - now_ms));
          refused := 1;
        END IF;
      END IF;
    END LOOP;
    IF refused < 0 THEN
      FOR chk IN SELECT value FROM jsonb_array_elements(ask -> 'c') LOOP
        IF chk ->> 0 = 'r' THEN
          INSERT INTO ${STARTS} VALUES (p_prefix, chk ->> 1, ask ->> 't', now_ms) ON CONFLICT DO NOTHING;
        ELSE
          INSERT INTO ${PERMITS} VALUES (p_prefix, chk ->> 1, ask ->> 't', now_ms + (ask ->> 'ttl')::bigint) ON CONFLICT DO NOTHING;
        END IF;
      END LOOP;
    END IF;
    answers := answers || jsonb_build_array(jsonb_build_array(CASE WHEN refused < 0 THEN 1 ELSE 0 END, wait_ms, refused));
  END LOOP;
  RETURN answers;
END
$fn$;
`;

/** Whether PERMITS_SCHEMA must run (one row when it must); see NEEDS_DEFERRED_SCHEMA for why first. */
export const NEEDS_PERMITS_SCHEMA = `SELECT 1 WHERE to_regprocedure('${TAKE_FUNCTION}(text,bigint,jsonb)') IS NULL`;

export const TAKE = `SELECT ${TAKE_FUNCTION}($1, $2, $3::jsonb) AS answers`;

export const RELEASE = `DELETE FROM ${PERMITS} WHERE prefix = $1 AND token = $2 AND id = ANY($3::text[])`;
