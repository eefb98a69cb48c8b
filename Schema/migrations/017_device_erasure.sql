-- Erasing one device of a person, archive keys per device, and retention's last run (SPEC §13).
--
-- `erasure_work.device_id`: an erasure of one device (`DELETE /v1/users/{u}/devices/{d}`,
-- `locgate erase --device`); NULL erases the whole person, as before. A device's erasure goes
-- through the same pages, turns between apps, retries and acknowledgements as a person's: its
-- pages read only that device's events (`locgate_erase_user_page` with that one device), and
-- the step that finds nothing of the device left ends it with `locgate_erase_device`. The
-- record (`erasures`) is the same and names no one.
--
-- `archive_keys.device_id`: archives seal each line with the key of its device from now on, so
-- that erasing a device shreds its lines in every archive file while the person's other devices
-- stay readable. A key made before this migration (device_id NULL) sealed every device of its
-- person: erasing any one of those devices deletes it too, and with it the person's lines in the
-- archives written before (docs/privacy.md).
--
-- `retention_runs`: per app, the last retention run that erased events (`GET
-- /v1/apps/{appId}/retention`'s `lastRun`): when it ran, its cut, how many events it erased
-- and how many devices they belonged to. No id of anyone.

ALTER TABLE erasure_work ADD COLUMN device_id text;

ALTER TABLE archive_keys ADD COLUMN device_id text;
ALTER TABLE archive_keys DROP CONSTRAINT archive_keys_app_id_user_id_key;
CREATE UNIQUE INDEX archive_keys_device ON archive_keys (app_id, user_id, device_id);

-- The end of a device's erasure, once its pages found nothing of it left in the log: any row
-- of the device the pages did not reach (its stream, state and snapshots, after taking it out
-- of the maintained counts), then its archive key, and, when the device existed (`p_existed`:
-- the erasure's pages erased it, or this call does), the person's key of earlier releases,
-- which sealed this device's archived lines too. The caller holds the person's lock (taken
-- exclusively). Returns {events, devices} deleted.
CREATE FUNCTION locgate_erase_device(p_app uuid, p_user text, p_device text, p_existed boolean) RETURNS bigint[]
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    erased_events bigint;
    erased_devices bigint;
BEGIN
    PERFORM set_config('locgate.erasing', 'on', true);
    DELETE FROM events WHERE app_id = p_app AND user_id = p_user AND device_id = p_device;
    GET DIAGNOSTICS erased_events = ROW_COUNT;
    PERFORM set_config('locgate.erasing', 'off', true);

    INSERT INTO device_counts (app_id, lane, state_id, status, platform, os_major, app_version, devices)
    SELECT app_id, (pg_backend_pid() % 16)::smallint, hashtextextended(state::text, 0), min(status), min(platform),
           min(os_major), min(app_version), -count(*)
    FROM device_states WHERE app_id = p_app AND user_id = p_user AND device_id = p_device
    GROUP BY app_id, hashtextextended(state::text, 0)
    ORDER BY 3
    ON CONFLICT (app_id, lane, state_id) DO UPDATE SET devices = device_counts.devices + excluded.devices;
    DELETE FROM device_states WHERE app_id = p_app AND user_id = p_user AND device_id = p_device;
    DELETE FROM streams WHERE app_id = p_app AND user_id = p_user AND device_id = p_device;
    GET DIAGNOSTICS erased_devices = ROW_COUNT;

    WITH removed AS (
        DELETE FROM stream_snapshots s
        WHERE s.app_id = p_app AND s.user_id = p_user AND s.device_id = p_device
        RETURNING s.archive_id)
    DELETE FROM event_archives a
    USING (SELECT DISTINCT archive_id FROM removed) r
    WHERE a.id = r.archive_id AND a.kind = 'erasure';

    DELETE FROM archive_keys WHERE app_id = p_app AND user_id = p_user AND device_id = p_device;
    IF p_existed OR erased_devices > 0 THEN
        DELETE FROM archive_keys WHERE app_id = p_app AND user_id = p_user AND device_id IS NULL;
    END IF;
    RETURN ARRAY[erased_events, erased_devices];
END
$$;

CREATE TABLE retention_runs (
    app_id uuid PRIMARY KEY REFERENCES apps (id),
    -- When the run started.
    at timestamptz NOT NULL,
    -- Events recorded before this time were erased.
    cut timestamptz NOT NULL,
    events bigint NOT NULL CHECK (events >= 0),
    devices bigint NOT NULL CHECK (devices >= 0)
);

REVOKE ALL ON FUNCTION locgate_erase_device(uuid, text, text, boolean) FROM PUBLIC;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'locgate_service') THEN
        GRANT EXECUTE ON FUNCTION locgate_erase_device(uuid, text, text, boolean) TO locgate_service;
        GRANT SELECT, INSERT, UPDATE ON retention_runs TO locgate_service;
    END IF;
END
$$;
