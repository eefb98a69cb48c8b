-- Analytics (SPEC §6): per-device milestones and counters rolled up by day and device context.

-- Milestones a device has reached, once each (bit set, see DeviceMilestones).
ALTER TABLE device_states ADD COLUMN milestones integer NOT NULL DEFAULT 0;
CREATE INDEX device_states_status ON device_states (app_id, status);

-- Counters by day (of occurredAt, UTC) and by the device's context when the event happened.
-- Maintained by a subscriber of the log with its checkpoint in the same transaction, so each
-- event is counted exactly once; `locgate replay` rebuilds it.
CREATE TABLE analytics_rollups (
    app_id uuid NOT NULL REFERENCES apps (id),
    day date NOT NULL,
    platform text NOT NULL,
    os_major integer NOT NULL,
    app_version text NOT NULL,
    metric text NOT NULL,
    key text NOT NULL,
    count bigint NOT NULL,
    PRIMARY KEY (app_id, metric, day, platform, os_major, app_version, key)
);

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'locgate_service') THEN
        GRANT SELECT, INSERT, UPDATE, DELETE ON analytics_rollups TO locgate_service;
    END IF;
END
$$;
