-- Erasure (SPEC §13): forgetting a person without breaking the log's guarantees.
--
-- The service role keeps no UPDATE or DELETE on `events`: a person's events, streams, device
-- states and snapshots leave only through `locgate_erase_user`, a function of the schema's
-- owner (SECURITY DEFINER) that takes an app and a user and nothing else. The append-only
-- trigger lets a DELETE through only inside that function (a transaction-local setting it
-- sets, checked together with the owner being the current user).
--
-- `erasures` is the audit of every erasure: no user or device id, only counts and times.
-- `erasure_work` holds the user id of an erasure still under way, and is deleted when it is
-- done; `erasure_rollups` keeps the analytics counters the erased events contributed (they
-- name no one), so that a replay of the log counts what the live rollups count.
-- `server_processes` and `erasure_acks`: an erasure is done once every live server process
-- has dropped the person from its caches and push streams (or emptied them since).

CREATE TABLE erasures (
    id uuid PRIMARY KEY,
    app_id uuid NOT NULL REFERENCES apps (id),
    status text NOT NULL CHECK (status IN ('pending', 'done')),
    requested_at timestamptz NOT NULL DEFAULT now(),
    erased_at timestamptz,
    completed_at timestamptz,
    events bigint NOT NULL DEFAULT 0,
    devices bigint NOT NULL DEFAULT 0
);
CREATE INDEX erasures_pending ON erasures (requested_at) WHERE status = 'pending';

CREATE TABLE erasure_work (
    erasure_id uuid PRIMARY KEY REFERENCES erasures (id),
    app_id uuid NOT NULL,
    user_id text NOT NULL,
    device_ids text[] NOT NULL DEFAULT '{}'
);

CREATE TABLE erasure_rollups (
    erasure_id uuid NOT NULL REFERENCES erasures (id),
    app_id uuid NOT NULL REFERENCES apps (id),
    day date NOT NULL,
    platform text NOT NULL,
    os_major integer NOT NULL,
    app_version text NOT NULL,
    metric text NOT NULL,
    key text NOT NULL,
    count bigint NOT NULL,
    PRIMARY KEY (erasure_id, app_id, metric, day, platform, os_major, app_version, key)
);

CREATE TABLE server_processes (
    id uuid PRIMARY KEY,
    seen_at timestamptz NOT NULL DEFAULT now(),
    -- When the process last emptied its caches (start, or LISTEN re-established).
    resynced_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE erasure_acks (
    erasure_id uuid NOT NULL REFERENCES erasures (id),
    process_id uuid NOT NULL,
    PRIMARY KEY (erasure_id, process_id)
);

-- The append-only trigger, with the one way out.
CREATE OR REPLACE FUNCTION locgate_refuse_event_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('locgate.erasing', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'the event log is append-only: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;

-- Deletes one person of one app: events (every partition), streams, device states and archive
-- snapshots. Returns {events, devices}. The caller holds the person's append lock.
CREATE FUNCTION locgate_erase_user(p_app uuid, p_user text) RETURNS bigint[]
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
    RETURN ARRAY[erased_events, erased_devices];
END
$$;

-- Statistics keep sampled values (most common values, histograms): after an erasure they are
-- gathered again, so that none keeps an erased id.
CREATE FUNCTION locgate_analyze_after_erasure() RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    ANALYZE streams;
    ANALYZE device_states;
    ANALYZE stream_snapshots;
    ANALYZE events;
END
$$;

REVOKE ALL ON FUNCTION locgate_erase_user(uuid, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION locgate_analyze_after_erasure() FROM PUBLIC;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'locgate_service') THEN
        GRANT SELECT, INSERT, UPDATE ON erasures TO locgate_service;
        GRANT SELECT, INSERT, DELETE ON erasure_work, erasure_acks TO locgate_service;
        GRANT SELECT, INSERT ON erasure_rollups TO locgate_service;
        GRANT SELECT, INSERT, UPDATE, DELETE ON server_processes TO locgate_service;
        GRANT EXECUTE ON FUNCTION locgate_erase_user(uuid, text) TO locgate_service;
        GRANT EXECUTE ON FUNCTION locgate_analyze_after_erasure() TO locgate_service;
    END IF;
END
$$;
