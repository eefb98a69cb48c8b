-- Devices per distinct state, maintained in the append transaction: what the status
-- distribution and the dashboard's feature coverage read instead of every row of
-- device_states (262 ms and 518 ms for one app at a million events; a few thousand rows here
-- whatever the number of devices).
--
-- Each append adds +1 for a device's new state and -1 for its old one. Concurrent appends
-- write different lanes (the backend's pid modulo 16), so they never wait on each other's
-- counter rows; a reader sums the lanes. A lane's count can be negative, the sum never is.
-- platform, os_major, app_version and status are functions of the state, kept as columns for
-- GROUP BY.
CREATE TABLE device_counts (
    app_id uuid NOT NULL REFERENCES apps (id),
    lane smallint NOT NULL,
    state jsonb NOT NULL,
    status text NOT NULL,
    platform text,
    os_major integer,
    app_version text,
    devices bigint NOT NULL,
    PRIMARY KEY (app_id, lane, state)
);

INSERT INTO device_counts (app_id, lane, state, status, platform, os_major, app_version, devices)
SELECT app_id, 0, state, min(status), min(platform), min(os_major), min(app_version), count(*)
FROM device_states GROUP BY app_id, state;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'locgate_service') THEN
        GRANT SELECT, INSERT, UPDATE, DELETE ON device_counts TO locgate_service;
    END IF;
END
$$;
