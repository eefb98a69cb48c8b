-- All-time totals of the analytics counters, without the day: what a query with no time range
-- and no day or week grouping reads (a few rows per app instead of one per day).
CREATE TABLE analytics_totals (
    app_id uuid NOT NULL REFERENCES apps (id),
    platform text NOT NULL,
    os_major integer NOT NULL,
    app_version text NOT NULL,
    metric text NOT NULL,
    key text NOT NULL,
    count bigint NOT NULL,
    PRIMARY KEY (app_id, metric, platform, os_major, app_version, key)
);

INSERT INTO analytics_totals (app_id, platform, os_major, app_version, metric, key, count)
SELECT app_id, platform, os_major, app_version, metric, key, sum(count)
FROM analytics_rollups GROUP BY app_id, platform, os_major, app_version, metric, key;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'locgate_service') THEN
        GRANT SELECT, INSERT, UPDATE, DELETE ON analytics_totals TO locgate_service;
    END IF;
END
$$;
