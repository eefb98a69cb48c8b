-- The analytics counters by day without platform, OS major and app version: what a query
-- grouped by day or week alone reads (a row per day, metric and key; the rollups hold one per
-- day and every platform, OS major and app version: 87,343 rows for 48 days at 10 million
-- events, 77 ms to sum by week).
CREATE TABLE analytics_days (
    app_id uuid NOT NULL REFERENCES apps (id),
    day date NOT NULL,
    metric text NOT NULL,
    key text NOT NULL,
    count bigint NOT NULL,
    PRIMARY KEY (app_id, metric, day, key)
);

INSERT INTO analytics_days (app_id, day, metric, key, count)
SELECT app_id, day, metric, key, sum(count) FROM analytics_rollups GROUP BY app_id, day, metric, key;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'locgate_service') THEN
        GRANT SELECT, INSERT, UPDATE, DELETE ON analytics_days TO locgate_service;
    END IF;
END
$$;
