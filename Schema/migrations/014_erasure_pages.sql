-- Erasure in pages, scheduled fairly between apps, retried with backoff (SPEC §13).
--
-- A person is erased a page at a time: each page is one transaction under the person's lock
-- (`locgate_erase_user_page`), so that neither the server's memory nor any statement grows with
-- the person. Devices whose every remaining event is in the page go whole (events, stream,
-- state, snapshots, maintained counts); the one device a full page cuts keeps a snapshot of its
-- state at the cut (`stream_snapshots`, under an `erasure` row of `event_archives` that names no
-- file), as retention keeps one, so that replay and verify agree between pages. The erasure ends
-- in the transaction that finds nothing of the person left: `locgate_erase_user` then deletes
-- the archive key, and the app versions only erased devices reported are folded into
-- "(erased)" (`locgate_fold_erased_app_versions`).
--
-- `erasures` gains:
--   performed_at     when the database held nothing more of the person (phase 1 done); phase 2
--                    counts acknowledgements from then. `erased_at` is now when the first page
--                    went: from then on the counters the erasure kept (`erasure_rollups`) count
--                    for a replay. A record is never `done` before it is performed.
--   attempts         how many of its steps failed (each retried after a backoff);
--   last_error       the error code of the last failure (an API error code; no id, no message);
--   next_attempt_at  when a step of it may run again.
-- `erasure_turns`: when each app's erasures last had a step; the worker serves the app whose
-- turn is oldest, so that one app's flood or very large person holds another app's erasure up
-- for a page at most.
-- `erasure_devices`: the devices an erasure has erased so far, read a page at a time by phase 2
-- (in place of the work row's array, which grew with the person), deleted when it is done.

ALTER TABLE erasures ADD COLUMN performed_at timestamptz;
ALTER TABLE erasures ADD COLUMN attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0);
ALTER TABLE erasures ADD COLUMN last_error text;
ALTER TABLE erasures ADD COLUMN next_attempt_at timestamptz NOT NULL DEFAULT now();
UPDATE erasures SET performed_at = erased_at WHERE erased_at IS NOT NULL;
ALTER TABLE erasures ADD CONSTRAINT erasures_done_when_performed CHECK (status <> 'done' OR performed_at IS NOT NULL);

-- Pending erasures per app: the 10,000 bound counts them, the worker picks an app's oldest due.
CREATE INDEX erasures_app_pending ON erasures (app_id) WHERE status = 'pending';
CREATE INDEX erasures_app_queue ON erasures (app_id, requested_at) WHERE status = 'pending' AND performed_at IS NULL;

CREATE TABLE erasure_turns (
    app_id uuid PRIMARY KEY REFERENCES apps (id),
    -- An app that never had a turn goes first.
    taken_at timestamptz NOT NULL DEFAULT '-infinity'
);
INSERT INTO erasure_turns (app_id) SELECT DISTINCT app_id FROM erasures WHERE status = 'pending';

CREATE TABLE erasure_devices (
    erasure_id uuid NOT NULL REFERENCES erasures (id),
    device_id text NOT NULL,
    PRIMARY KEY (erasure_id, device_id)
);
INSERT INTO erasure_devices (erasure_id, device_id)
SELECT DISTINCT w.erasure_id, d FROM erasure_work w, unnest(w.device_ids) AS d;
UPDATE erasure_work SET device_ids = '{}' WHERE cardinality(device_ids) > 0;

-- The fold looks an app version up among every erasure's counters of the app.
CREATE INDEX erasure_rollups_app_version ON erasure_rollups (app_id, app_version);

-- An erasure page's snapshot of the device it cut.
ALTER TABLE event_archives DROP CONSTRAINT event_archives_kind_check;
ALTER TABLE event_archives ADD CONSTRAINT event_archives_kind_check CHECK (kind IN ('archive', 'retention', 'erasure'));

-- One page of an erasure, in the caller's transaction, which holds the person's lock (taken
-- exclusively) and the analytics rollup's, and has kept the counters of the page's events:
--   * deletes the person's events of each device of `p_devices` up to its version in
--     `p_versions`;
--   * the devices of `p_gone` that have no event left go whole: out of the maintained counts
--     first, then their device states, streams and snapshots (a device that still has events
--     stays, for a later page);
--   * `p_snapshot` is the erasure row of `event_archives` under which the caller saved the
--     snapshot of the device the page cut: that device's older snapshots go.
-- An erasure row of `event_archives` holds one snapshot and nothing else: it goes with it.
-- Returns {events, devices} deleted.
CREATE FUNCTION locgate_erase_user_page(
    p_app uuid, p_user text, p_devices text[], p_versions bigint[], p_gone text[], p_snapshot bigint
) RETURNS bigint[]
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    erased_events bigint;
    gone_devices text[];
BEGIN
    PERFORM set_config('locgate.erasing', 'on', true);
    DELETE FROM events e
    USING unnest(p_devices, p_versions) AS k(d, v)
    WHERE e.app_id = p_app AND e.user_id = p_user AND e.device_id = k.d AND e.version <= k.v;
    GET DIAGNOSTICS erased_events = ROW_COUNT;
    PERFORM set_config('locgate.erasing', 'off', true);

    SELECT coalesce(array_agg(s.device_id ORDER BY s.device_id), '{}') INTO gone_devices
    FROM streams s
    WHERE s.app_id = p_app AND s.user_id = p_user AND s.device_id = ANY(p_gone)
      AND NOT EXISTS (SELECT 1 FROM events e WHERE e.app_id = p_app AND e.user_id = p_user AND e.device_id = s.device_id);

    -- Measures of the present no longer count these devices.
    INSERT INTO device_counts (app_id, lane, state_id, status, platform, os_major, app_version, devices)
    SELECT app_id, (pg_backend_pid() % 16)::smallint, hashtextextended(state::text, 0), min(status), min(platform),
           min(os_major), min(app_version), -count(*)
    FROM device_states WHERE app_id = p_app AND user_id = p_user AND device_id = ANY(gone_devices)
    GROUP BY app_id, hashtextextended(state::text, 0)
    ORDER BY 3
    ON CONFLICT (app_id, lane, state_id) DO UPDATE SET devices = device_counts.devices + excluded.devices;
    DELETE FROM device_states WHERE app_id = p_app AND user_id = p_user AND device_id = ANY(gone_devices);
    DELETE FROM streams WHERE app_id = p_app AND user_id = p_user AND device_id = ANY(gone_devices);

    WITH removed AS (
        DELETE FROM stream_snapshots s
        WHERE s.app_id = p_app AND s.user_id = p_user
          AND (s.device_id = ANY(gone_devices)
               OR (p_snapshot IS NOT NULL AND s.device_id = ANY(p_devices) AND s.archive_id < p_snapshot))
        RETURNING s.archive_id)
    DELETE FROM event_archives a
    USING (SELECT DISTINCT archive_id FROM removed) r
    WHERE a.id = r.archive_id AND a.kind = 'erasure';

    RETURN ARRAY[erased_events, cardinality(gone_devices)::bigint];
END
$$;

-- The "(erased)" fold (SPEC §13): of the app versions given (client text, which can name a
-- person), those that only erased devices reported have their counters moved into the group
-- "(erased)", in every table of counters that names a version. A version is kept while a device
-- of the app is in a state with it now (the maintained counts), or while any of its counters
-- is more than the erasures' counters of it (a device not erased counted there; counters of
-- archived events cannot be told apart by person, and keep the version too). The caller holds
-- the analytics rollup's lock, so that no counter moves meanwhile. Returns the versions folded.
CREATE FUNCTION locgate_fold_erased_app_versions(p_app uuid, p_candidates text[]) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    folded text[];
BEGIN
    SELECT coalesce(array_agg(c.v ORDER BY c.v), '{}') INTO folded
    FROM (SELECT DISTINCT v FROM unnest(p_candidates) AS u(v)) c
    WHERE c.v NOT IN ('(erased)', 'unknown')
      AND NOT EXISTS (
          SELECT 1 FROM device_counts d
          WHERE d.app_id = p_app AND d.app_version = c.v
          GROUP BY d.state_id HAVING sum(d.devices) <> 0)
      AND NOT EXISTS (
          SELECT 1
          FROM (SELECT platform, os_major, metric, key, sum(count) AS n FROM analytics_totals
                WHERE app_id = p_app AND app_version = c.v GROUP BY 1, 2, 3, 4) t
          FULL JOIN (SELECT platform, os_major, metric, key, sum(count) AS n FROM erasure_rollups
                     WHERE app_id = p_app AND app_version = c.v GROUP BY 1, 2, 3, 4) e
            USING (platform, os_major, metric, key)
          WHERE coalesce(t.n, 0) <> coalesce(e.n, 0));
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

-- Statistics after erasures also cover the erasures' own work rows and the counters a fold
-- relabelled, so that no sampled value keeps an id or a folded version.
CREATE OR REPLACE FUNCTION locgate_analyze_after_erasure() RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    ANALYZE streams;
    ANALYZE device_states;
    ANALYZE stream_snapshots;
    ANALYZE archive_keys;
    ANALYZE erasure_work;
    ANALYZE erasure_devices;
    ANALYZE erasure_rollups;
    ANALYZE analytics_rollups;
    ANALYZE analytics_totals;
    ANALYZE archived_rollups;
    ANALYZE events;
END
$$;

REVOKE ALL ON FUNCTION locgate_erase_user_page(uuid, text, text[], bigint[], text[], bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION locgate_fold_erased_app_versions(uuid, text[]) FROM PUBLIC;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'locgate_service') THEN
        GRANT SELECT, INSERT, UPDATE ON erasure_turns TO locgate_service;
        GRANT SELECT, INSERT, DELETE ON erasure_devices TO locgate_service;
        -- A page adds its counters to the erasure's (INSERT ... ON CONFLICT DO UPDATE).
        GRANT UPDATE ON erasure_rollups TO locgate_service;
        GRANT EXECUTE ON FUNCTION locgate_erase_user_page(uuid, text, text[], bigint[], text[], bigint) TO locgate_service;
        GRANT EXECUTE ON FUNCTION locgate_fold_erased_app_versions(uuid, text[]) TO locgate_service;
    END IF;
END
$$;
