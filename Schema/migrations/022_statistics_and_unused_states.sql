-- What outlives an erasure in the database's own bookkeeping (SPEC §13), and maintenance that
-- no longer holds the change feed back (SPEC §5, "Resources").
--
-- 1. No column statistics of ids or client text. ANALYZE (autovacuum's too) samples values
--    into `pg_statistic` (`pg_stats`): most common values and histograms that could keep an
--    erased user id, device id, event id, install id, app version, session key, purpose key or
--    the time a client said an event occurred.
--    Earlier releases gathered statistics again after every erasure, in one transaction that
--    held a transaction id while it sampled `events`: every app's change feed (which reads
--    below the oldest running transaction) stalled for as long, seconds on a large log. These
--    columns now get no statistics at all (`SET STATISTICS 0`), so no ANALYZE is needed for
--    privacy, and none runs after erasures. The statistics already gathered for them are
--    dropped with the same statement: `ALTER COLUMN ... TYPE` to the column's own type removes
--    a column's statistics (a non-superuser may not delete from `pg_statistic`) without
--    rewriting the table or rebuilding its indexes. The planner estimates these columns with
--    its defaults; every query on them goes through a unique index or the app's.
-- 2. New partitions of `events` get the same settings (`LIKE` does not copy them).
-- 3. `locgate_analyze_after_erasure` does nothing now; it stays for servers of the release
--    before, which call it, while they are replaced.
-- 4. States no device is in are forgotten. The maintained counts (`device_counts`) kept a row
--    at zero for every state devices had left, and `device_state_kinds` the state's JSON (app
--    version, session keys, purpose keys), after the devices that reported them were erased.
--    `locgate_forget_unused_states` deletes an app's rows of states no device of it is in and
--    no snapshot keeps, and then the states themselves that nothing refers to. It takes
--    `device_state_kinds` in SHARE mode: every append that moves a device into a state writes
--    that table in the same statement as the counts, so none is under way meanwhile, and none
--    can refer to a state between the check and the delete (appends wait for it, a moment).
--    `state_kind_checks` holds the states whose last snapshot an erasure deleted (a state kept
--    only by a snapshot has no row in the counts to find it by).
-- 5. `locgate_fold_erased_app_versions` decides every version given in one pass over each
--    table of counters (it looked each one up apart), so that a sweep over many versions is
--    cheap; what it decides is unchanged.

-- 1. The columns of ids and client text.
DO $$
DECLARE
    c record;
BEGIN
    FOR c IN
        SELECT * FROM (VALUES
            ('events', 'user_id', 'text'), ('events', 'device_id', 'text'), ('events', 'event_id', 'uuid'),
            ('events', 'data', 'jsonb'), ('events', 'outcome', 'jsonb'), ('events', 'occurred_at', 'timestamptz'),
            ('streams', 'user_id', 'text'), ('streams', 'device_id', 'text'),
            ('device_states', 'user_id', 'text'), ('device_states', 'device_id', 'text'), ('device_states', 'state', 'jsonb'),
            ('device_states', 'app_version', 'text'), ('device_states', 'install_id', 'text'),
            ('stream_snapshots', 'user_id', 'text'), ('stream_snapshots', 'device_id', 'text'),
            ('stream_snapshots', 'install_id', 'text'), ('stream_snapshots', 'last_occurred_at', 'timestamptz'),
            ('archive_keys', 'user_id', 'text'), ('archive_keys', 'device_id', 'text'), ('archive_keys', 'key', 'bytea'),
            ('erasure_work', 'user_id', 'text'), ('erasure_work', 'device_id', 'text'), ('erasure_work', 'device_ids', 'text[]'),
            ('erasure_devices', 'device_id', 'text'),
            ('device_state_kinds', 'state', 'jsonb'),
            ('device_counts', 'app_version', 'text'),
            ('analytics_rollups', 'app_version', 'text'), ('analytics_totals', 'app_version', 'text'),
            ('erasure_rollups', 'app_version', 'text'), ('archived_rollups', 'app_version', 'text')
        ) AS t(table_name, column_name, column_type)
    LOOP
        -- On `events` both recurse into every partition.
        EXECUTE format('ALTER TABLE %I ALTER COLUMN %I SET STATISTICS 0, ALTER COLUMN %I TYPE %s',
                       c.table_name, c.column_name, c.column_name, c.column_type);
    END LOOP;
END
$$;

-- 2. New partitions: as migration 010 made them, with no statistics of ids and client text.
CREATE OR REPLACE FUNCTION locgate_create_event_partition(low bigint, high bigint) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    name text := format('events_p%s', lpad(low::text, 12, '0'));
BEGIN
    EXECUTE format('CREATE TABLE %I (LIKE events INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', name);
    EXECUTE format('ALTER TABLE %I ALTER COLUMN user_id SET STATISTICS 0, ALTER COLUMN device_id SET STATISTICS 0, '
                   'ALTER COLUMN event_id SET STATISTICS 0, ALTER COLUMN data SET STATISTICS 0, '
                   'ALTER COLUMN outcome SET STATISTICS 0, ALTER COLUMN occurred_at SET STATISTICS 0', name);
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (position >= %s AND position < %s)',
                   name, name || '_range', low, high);
    EXECUTE format('ALTER TABLE %I ADD PRIMARY KEY (position)', name);
    EXECUTE format('ALTER TABLE %I ADD UNIQUE (app_id, event_id)', name);
    EXECUTE format('ALTER TABLE %I ADD UNIQUE (app_id, user_id, device_id, version)', name);
    EXECUTE format('CREATE INDEX ON %I (tx_id, position)', name);
    EXECUTE format('CREATE INDEX ON %I (app_id, tx_id, position)', name);
    EXECUTE format('ALTER TABLE events ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)', name, low, high);
    -- The range is the partition bound now; the CHECK only spared ATTACH a scan.
    EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', name, name || '_range');
    RETURN name;
END
$$;

-- 3. Nothing to gather after an erasure any more.
CREATE OR REPLACE FUNCTION locgate_analyze_after_erasure() RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    NULL;
END
$$;

-- 4. States no device is in.
-- The counts of a state in every app and lane, and the snapshots that keep a state: what the
-- check before deleting a state looks up.
CREATE INDEX device_counts_state ON device_counts (state_id);
CREATE INDEX stream_snapshots_state ON stream_snapshots (state_id);

CREATE TABLE state_kind_checks (
    state_id bigint PRIMARY KEY
);

-- Of the states `p_states`: the app's rows of those no device of the app is in (their lanes
-- sum to zero) and no snapshot keeps are deleted, then every state of `p_states` that no row
-- of the counts (of any app) and no snapshot refers to, and the states' entries in
-- `state_kind_checks`. The caller holds the analytics rollup's lock (erasure pages, retention
-- batches and rebuilds, which change the counts and snapshots otherwise than appends do, hold
-- it too) and nothing an append may wait for. Returns the states deleted.
CREATE FUNCTION locgate_forget_unused_states(p_app uuid, p_states bigint[]) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    unused bigint[];
    forgotten integer;
BEGIN
    -- Appends under way that write the counts finish first; new ones wait until the commit.
    LOCK TABLE device_state_kinds IN SHARE MODE;
    SELECT coalesce(array_agg(z.state_id ORDER BY z.state_id), '{}') INTO unused
    FROM (SELECT state_id FROM device_counts
          WHERE app_id = p_app AND state_id = ANY(p_states)
          GROUP BY state_id HAVING sum(devices) = 0) z
    WHERE NOT EXISTS (SELECT 1 FROM stream_snapshots s WHERE s.state_id = z.state_id);
    DELETE FROM device_counts WHERE app_id = p_app AND state_id = ANY(unused);
    DELETE FROM device_state_kinds k
    WHERE k.state_id = ANY(p_states)
      AND NOT EXISTS (SELECT 1 FROM device_counts d WHERE d.state_id = k.state_id)
      AND NOT EXISTS (SELECT 1 FROM stream_snapshots s WHERE s.state_id = k.state_id);
    GET DIAGNOSTICS forgotten = ROW_COUNT;
    DELETE FROM state_kind_checks WHERE state_id = ANY(p_states);
    RETURN forgotten;
END
$$;

-- 5. The "(erased)" fold (migrations 014, 019), each table of counters read once for all the
-- versions given.
CREATE OR REPLACE FUNCTION locgate_fold_erased_app_versions(p_app uuid, p_candidates text[]) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    folded text[];
BEGIN
    WITH c AS (
        SELECT DISTINCT v FROM unnest(p_candidates) AS u(v) WHERE v IS NOT NULL AND v NOT IN ('(erased)', 'unknown')),
    -- Versions a device of the app is in a state with now: kept, and their counters not read.
    live AS (
        SELECT DISTINCT app_version AS v
        FROM (SELECT app_version, state_id FROM device_counts
              WHERE app_id = p_app AND app_version IN (SELECT v FROM c)
              GROUP BY app_version, state_id HAVING sum(devices) <> 0) d),
    gone AS (SELECT v FROM c WHERE NOT EXISTS (SELECT 1 FROM live WHERE live.v = c.v)),
    -- The others' counters, and the counters of their events that are gone (erased, or erased
    -- by retention).
    t AS (
        SELECT app_version AS v, platform, os_major, metric, key, sum(count) AS n FROM analytics_totals
        WHERE app_id = p_app AND app_version IN (SELECT v FROM gone) GROUP BY 1, 2, 3, 4, 5),
    e AS (
        SELECT v, platform, os_major, metric, key, sum(n) AS n
        FROM (SELECT app_version AS v, platform, os_major, metric, key, count AS n FROM erasure_rollups
              WHERE app_id = p_app AND app_version IN (SELECT v FROM gone)
              UNION ALL
              SELECT r.app_version, r.platform, r.os_major, r.metric, r.key, r.count
              FROM archived_rollups r JOIN event_archives a ON a.id = r.archive_id
              WHERE r.app_id = p_app AND r.app_version IN (SELECT v FROM gone) AND a.kind = 'retention') erased
        GROUP BY 1, 2, 3, 4, 5),
    -- Versions with a counter of an event that is still in the log (or was archived).
    kept AS (
        SELECT DISTINCT v FROM t FULL JOIN e USING (v, platform, os_major, metric, key)
        WHERE coalesce(t.n, 0) <> coalesce(e.n, 0))
    SELECT coalesce(array_agg(gone.v ORDER BY gone.v), '{}') INTO folded
    FROM gone
    WHERE NOT EXISTS (SELECT 1 FROM kept WHERE kept.v = gone.v);
    IF cardinality(folded) = 0 THEN
        RETURN 0;
    END IF;

    WITH moved AS (
        DELETE FROM analytics_rollups WHERE app_id = p_app AND app_version = ANY(folded)
        RETURNING day, platform, os_major, metric, key, count)
    INSERT INTO analytics_rollups (app_id, day, platform, os_major, app_version, metric, key, count)
    SELECT p_app, day, platform, os_major, '(erased)', metric, key, sum(count)
    FROM moved GROUP BY day, platform, os_major, metric, key
    ON CONFLICT (app_id, metric, day, platform, os_major, app_version, key)
    DO UPDATE SET count = analytics_rollups.count + excluded.count;

    WITH moved AS (
        DELETE FROM analytics_totals WHERE app_id = p_app AND app_version = ANY(folded)
        RETURNING platform, os_major, metric, key, count)
    INSERT INTO analytics_totals (app_id, platform, os_major, app_version, metric, key, count)
    SELECT p_app, platform, os_major, '(erased)', metric, key, sum(count)
    FROM moved GROUP BY platform, os_major, metric, key
    ON CONFLICT (app_id, metric, platform, os_major, app_version, key)
    DO UPDATE SET count = analytics_totals.count + excluded.count;

    WITH moved AS (
        DELETE FROM erasure_rollups WHERE app_id = p_app AND app_version = ANY(folded)
        RETURNING erasure_id, day, platform, os_major, metric, key, count)
    INSERT INTO erasure_rollups (erasure_id, app_id, day, platform, os_major, app_version, metric, key, count)
    SELECT erasure_id, p_app, day, platform, os_major, '(erased)', metric, key, sum(count)
    FROM moved GROUP BY erasure_id, day, platform, os_major, metric, key
    ON CONFLICT (erasure_id, app_id, metric, day, platform, os_major, app_version, key)
    DO UPDATE SET count = erasure_rollups.count + excluded.count;

    WITH moved AS (
        DELETE FROM archived_rollups WHERE app_id = p_app AND app_version = ANY(folded)
        RETURNING archive_id, day, platform, os_major, metric, key, count)
    INSERT INTO archived_rollups (archive_id, app_id, day, platform, os_major, app_version, metric, key, count)
    SELECT archive_id, p_app, day, platform, os_major, '(erased)', metric, key, sum(count)
    FROM moved GROUP BY archive_id, day, platform, os_major, metric, key
    ON CONFLICT (archive_id, app_id, metric, day, platform, os_major, app_version, key)
    DO UPDATE SET count = archived_rollups.count + excluded.count;

    RETURN cardinality(folded);
END
$$;

REVOKE ALL ON FUNCTION locgate_forget_unused_states(uuid, bigint[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION locgate_fold_erased_app_versions(uuid, text[]) FROM PUBLIC;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'locgate_service') THEN
        -- An erasure page records the states of the snapshots it deletes; the function above
        -- deletes what it checked.
        GRANT SELECT, INSERT ON state_kind_checks TO locgate_service;
        GRANT EXECUTE ON FUNCTION locgate_forget_unused_states(uuid, bigint[]) TO locgate_service;
        -- Archived counters are added to (an upsert), as the live rollups are.
        GRANT UPDATE ON archived_rollups TO locgate_service;
    END IF;
END
$$;
