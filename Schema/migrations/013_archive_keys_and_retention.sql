-- Archives that forget, and retention (SPEC §13).
--
-- `archive_keys`: one random AES-256 key per person of an app. `locgate archive` seals each
-- event's identifying fields (user, device, event id, type, data, times) with its person's key;
-- `locgate_erase_user` deletes the key with the rest of the person, so every archive file
-- written before the erasure holds that person only as ciphertext nobody can open again
-- (crypto-shredding). A key names its person only while the person exists.
--
-- `event_archives` gains the file's format (1: the plain CSV of earlier releases, which
-- `locgate archive upgrade` rewrites; 2: sealed) and a kind: an `archive` wrote a file, a
-- `retention` run wrote none (its rows only carry snapshots and counters, as an archive's do).
--
-- `apps.retention_days`: events of the app recorded more than that many days ago are erased by
-- the servers' retention schedule (NULL keeps everything). `locgate_forget_versions` deletes the
-- given prefix of each given stream, the one deletion of events besides an erasure.

CREATE TABLE archive_keys (
    id uuid PRIMARY KEY,
    app_id uuid NOT NULL REFERENCES apps (id),
    user_id text NOT NULL,
    key bytea NOT NULL CHECK (length(key) = 32),
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (app_id, user_id)
);

ALTER TABLE event_archives ADD COLUMN format smallint NOT NULL DEFAULT 1 CHECK (format IN (1, 2));
ALTER TABLE event_archives ADD COLUMN kind text NOT NULL DEFAULT 'archive' CHECK (kind IN ('archive', 'retention'));
ALTER TABLE event_archives ALTER COLUMN file DROP NOT NULL;
ALTER TABLE event_archives ALTER COLUMN sha256 DROP NOT NULL;

ALTER TABLE apps ADD COLUMN retention_days integer CHECK (retention_days BETWEEN 1 AND 36500);

-- The erasure function, now also deleting the person's archive key.
CREATE OR REPLACE FUNCTION locgate_erase_user(p_app uuid, p_user text) RETURNS bigint[]
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    erased_events bigint;
    erased_devices bigint;
BEGIN
    PERFORM set_config('locgate.erasing', 'on', true);
    DELETE FROM events WHERE app_id = p_app AND user_id = p_user;
    GET DIAGNOSTICS erased_events = ROW_COUNT;
    PERFORM set_config('locgate.erasing', 'off', true);
    DELETE FROM streams WHERE app_id = p_app AND user_id = p_user;
    GET DIAGNOSTICS erased_devices = ROW_COUNT;
    DELETE FROM device_states WHERE app_id = p_app AND user_id = p_user;
    DELETE FROM stream_snapshots WHERE app_id = p_app AND user_id = p_user;
    DELETE FROM archive_keys WHERE app_id = p_app AND user_id = p_user;
    RETURN ARRAY[erased_events, erased_devices];
END
$$;

-- Retention: deletes, for each (user, device, version) given, the stream's events up to that
-- version. The caller has saved the streams' snapshots at those versions and holds the
-- persons' locks. Returns the number of events deleted.
CREATE FUNCTION locgate_forget_versions(p_app uuid, p_users text[], p_devices text[], p_versions bigint[]) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    forgotten bigint;
BEGIN
    PERFORM set_config('locgate.erasing', 'on', true);
    DELETE FROM events e
    USING unnest(p_users, p_devices, p_versions) AS k(u, d, v)
    WHERE e.app_id = p_app AND e.user_id = k.u AND e.device_id = k.d AND e.version <= k.v;
    GET DIAGNOSTICS forgotten = ROW_COUNT;
    PERFORM set_config('locgate.erasing', 'off', true);
    RETURN forgotten;
END
$$;

-- ANALYZE after an erasure covers the keys too.
CREATE OR REPLACE FUNCTION locgate_analyze_after_erasure() RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    ANALYZE streams;
    ANALYZE device_states;
    ANALYZE stream_snapshots;
    ANALYZE archive_keys;
    ANALYZE events;
END
$$;

REVOKE ALL ON FUNCTION locgate_forget_versions(uuid, text[], text[], bigint[]) FROM PUBLIC;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'locgate_service') THEN
        -- Retention runs in the servers: it records its runs and saves snapshots and counters.
        GRANT SELECT, INSERT ON event_archives, stream_snapshots, archived_rollups TO locgate_service;
        GRANT DELETE ON stream_snapshots TO locgate_service;
        GRANT INSERT ON device_state_kinds TO locgate_service;
        GRANT EXECUTE ON FUNCTION locgate_forget_versions(uuid, text[], text[], bigint[]) TO locgate_service;
    END IF;
END
$$;

-- Phase 1 of an erasure writes the erased device ids into its work row (an UPDATE migration 012
-- did not grant), and a retention run inserts archive records with their identity.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'locgate_service') THEN
        GRANT UPDATE ON erasure_work TO locgate_service;
        EXECUTE format('GRANT USAGE ON SEQUENCE %s TO locgate_service', pg_get_serial_sequence('event_archives', 'id'));
    END IF;
END
$$;
