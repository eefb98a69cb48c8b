-- Retention folds app versions as an erasure does (SPEC §13): a version that only events
-- retention erased reported, and that no device is in a state with now, is client text that
-- can name a person, and its counters move into "(erased)". The fold's test gains one term: the
-- counters retention kept of the events it erased (`archived_rollups` of its `retention` rows)
-- count, beside the erasures' own, as counters of events that are gone. Counters of archives
-- (`locgate archive`, whose events are kept in a file) still keep their version.
CREATE OR REPLACE FUNCTION locgate_fold_erased_app_versions(p_app uuid, p_candidates text[]) RETURNS integer
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
          FULL JOIN (SELECT platform, os_major, metric, key, sum(n) AS n
                     FROM (SELECT platform, os_major, metric, key, count AS n FROM erasure_rollups
                           WHERE app_id = p_app AND app_version = c.v
                           UNION ALL
                           SELECT r.platform, r.os_major, r.metric, r.key, r.count
                           FROM archived_rollups r JOIN event_archives a ON a.id = r.archive_id
                           WHERE r.app_id = p_app AND r.app_version = c.v AND a.kind = 'retention') gone
                     GROUP BY 1, 2, 3, 4) e
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

REVOKE ALL ON FUNCTION locgate_fold_erased_app_versions(uuid, text[]) FROM PUBLIC;

-- The fold reads the archived counters of one app version (its key leads with the archive), and
-- every retention batch folds: without this, each would scan them all.
CREATE INDEX archived_rollups_app_version ON archived_rollups (app_id, app_version);
