-- Devices per distinct state, maintained in the append transaction: what the status
-- distribution and the dashboard's feature coverage read instead of every row of
-- device_states (262 ms and 518 ms for one app at a million events).
--
-- A state is named by a 64-bit hash of its jsonb text (hashtextextended, PostgreSQL's own,
-- stable across platforms: hash partitioning relies on it); device_state_kinds holds each
-- state once, so the count rows stay narrow (a state is about a kilobyte of JSON).
--
-- Each append adds +1 for a device's new state and -1 for its old one. Concurrent appends
-- write different lanes (the backend's pid modulo 16), so they never wait on each other's
-- counter rows; a reader sums the lanes. A lane's count can be negative, the sum never is.
-- platform, os_major, app_version and status are functions of the state, kept as columns for
-- the status distribution's GROUP BY.
CREATE TABLE device_state_kinds (
    state_id bigint PRIMARY KEY,
    state jsonb NOT NULL
);

CREATE TABLE device_counts (
    app_id uuid NOT NULL REFERENCES apps (id),
    lane smallint NOT NULL,
    state_id bigint NOT NULL,
    status text NOT NULL,
    platform text,
    os_major integer,
    app_version text,
    devices bigint NOT NULL,
    PRIMARY KEY (app_id, lane, state_id)
) WITH (fillfactor = 50);  -- room on the page for HOT updates: the counts change all the time

INSERT INTO device_state_kinds (state_id, state)
SELECT DISTINCT ON (hashtextextended(state::text, 0)) hashtextextended(state::text, 0), state FROM device_states;

INSERT INTO device_counts (app_id, lane, state_id, status, platform, os_major, app_version, devices)
SELECT app_id, 0, hashtextextended(state::text, 0), min(status), min(platform), min(os_major), min(app_version), count(*)
FROM device_states GROUP BY app_id, hashtextextended(state::text, 0);

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'locgate_service') THEN
        GRANT SELECT, INSERT, UPDATE, DELETE ON device_counts TO locgate_service;
        GRANT SELECT, INSERT ON device_state_kinds TO locgate_service;
    END IF;
END
$$;
