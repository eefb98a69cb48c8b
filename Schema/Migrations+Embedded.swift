// Generated from Schema/migrations/*.sql (see Deploy/embed): do not edit; generate it again
// after changing one of those files. A test fails while this file and the folder differ.

/// Every `.sql` file of `migrations`: its name and its text, byte for byte, in file-name
/// order. `SchemaMigrations.embedded()` reads them.
enum EmbeddedMigrations {
    static let files: [(name: String, text: String)] = [
        (
            name: "001_event_log.sql",
            text: #"""
-- The event log (SPEC §1): one stream per (app, user, device), versions 1..n without gaps,
-- and a global order that readers can follow without skipping late commits.

CREATE TABLE apps (
    id uuid PRIMARY KEY,
    name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- The head of every stream: its current version. Appends take an advisory lock per stream
-- before writing, so two writers of one stream take turns and versions never collide.
CREATE TABLE streams (
    app_id uuid NOT NULL REFERENCES apps (id),
    user_id text NOT NULL,
    device_id text NOT NULL,
    version bigint NOT NULL CHECK (version >= 0),
    PRIMARY KEY (app_id, user_id, device_id)
);

CREATE TABLE events (
    -- Assigned at insert; NOT the commit order. Readers page on (tx_id, position).
    position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- The writing transaction. Readers only read below the oldest transaction still running
    -- (pg_snapshot_xmin(pg_current_snapshot())), so a transaction that commits late can never
    -- be skipped.
    tx_id xid8 NOT NULL DEFAULT pg_current_xact_id(),
    app_id uuid NOT NULL REFERENCES apps (id),
    user_id text NOT NULL,
    device_id text NOT NULL,
    version bigint NOT NULL CHECK (version >= 1),
    -- The client's idempotency key, unique per app.
    event_id uuid NOT NULL,
    type text NOT NULL,
    data jsonb NOT NULL,
    occurred_at timestamptz NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    -- What the projection computed when the event was appended (effects, before, after);
    -- written once with the row, returned as the stored result of a duplicate.
    outcome jsonb,
    UNIQUE (app_id, user_id, device_id, version),
    UNIQUE (app_id, event_id)
);

CREATE INDEX events_global_order ON events (tx_id, position);

-- Where each named subscriber has read up to.
CREATE TABLE subscription_checkpoints (
    name text PRIMARY KEY,
    tx_id xid8 NOT NULL,
    position bigint NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- Append-only, for every role, the owner included: UPDATE, DELETE and TRUNCATE are refused.
CREATE FUNCTION locgate_refuse_event_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the event log is append-only: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;

CREATE TRIGGER events_append_only
    BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION locgate_refuse_event_change();

CREATE TRIGGER events_no_truncate
    BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION locgate_refuse_event_change();

-- The service's privileges: a NOLOGIN role that login roles are made members of. It may read
-- and append events, never change them. Created here when the migrating role may create roles;
-- otherwise a DBA creates it (Deploy/README.md).
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'locgate_service') THEN
        IF (SELECT rolcreaterole OR rolsuper FROM pg_roles WHERE rolname = current_user) THEN
            BEGIN
                CREATE ROLE locgate_service NOLOGIN;
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL; -- another database's migration created it at the same moment
            END;
        ELSE
            RAISE NOTICE 'role locgate_service is missing and % may not create it', current_user;
        END IF;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'locgate_service') THEN
        REVOKE ALL ON events FROM locgate_service;
        GRANT SELECT, INSERT ON events TO locgate_service;
        GRANT SELECT, INSERT, UPDATE ON apps, streams, subscription_checkpoints TO locgate_service;
        -- The server checks for pending migrations before it starts.
        GRANT SELECT ON locgate_migrations TO locgate_service;
    END IF;
END
$$;
REVOKE UPDATE, DELETE, TRUNCATE ON events FROM PUBLIC;

"""#
        ),
        (
            name: "002_gating.sql",
            text: #"""
-- The gating service (SPEC §4, §5): API keys, the feature catalog, and the device projection.

-- Keys are stored as SHA-256 of the key text; the key itself is shown once, at creation.
CREATE TABLE api_keys (
    id uuid PRIMARY KEY,
    app_id uuid NOT NULL REFERENCES apps (id),
    scope text NOT NULL CHECK (scope IN ('ingest', 'read', 'admin')),
    key_hash text NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);
CREATE INDEX api_keys_app ON api_keys (app_id);

CREATE TABLE features (
    app_id uuid NOT NULL REFERENCES apps (id),
    key text NOT NULL,
    definition jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (app_id, key)
);

-- The current state of every device, written in the append transaction (so a 200 from
-- POST /v1/events means the gate already reflects it). `state` is the SPEC §5 state object;
-- the other columns are what analytics group and count by.
CREATE TABLE device_states (
    app_id uuid NOT NULL REFERENCES apps (id),
    user_id text NOT NULL,
    device_id text NOT NULL,
    version bigint NOT NULL,
    state jsonb NOT NULL,
    status text NOT NULL,
    provisional boolean NOT NULL,
    platform text,
    os_major integer,
    app_version text,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (app_id, user_id, device_id)
);

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'locgate_service') THEN
        GRANT SELECT, INSERT, UPDATE ON api_keys, features, device_states TO locgate_service;
        GRANT DELETE ON features TO locgate_service;
    END IF;
END
$$;

"""#
        ),
        (
            name: "003_analytics.sql",
            text: #"""
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

"""#
        ),
        (
            name: "004_analytics_totals.sql",
            text: #"""
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

"""#
        ),
        (
            name: "005_drop_status_index.sql",
            text: #"""
-- The (app_id, status) index led the planner astray: for a new app, whose statistics estimate
-- one row, it probed devices by app_id through this index and filtered the rest, scanning
-- every device of the app for each one (330 ms per 1,000-event append at 20,000 devices).
-- Per-device probes need the primary key alone; the status analytics read the app's rows
-- through the primary key's app_id prefix.
DROP INDEX IF EXISTS device_states_status;

"""#
        ),
        (
            name: "006_device_counts.sql",
            text: #"""
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

"""#
        ),
        (
            name: "007_analytics_days.sql",
            text: #"""
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

"""#
        ),
        (
            name: "008_partitioned_events.sql",
            text: #"""
-- The event log partitioned by RANGE (position), so that it stays fast at hundreds of millions
-- of events and old events can be archived by dropping whole partitions (docs/operations.md,
-- "The partitioned log").
--
-- Why position: it is assigned at insert from one sequence, so every new row goes to the newest
-- partition (its indexes stay small and in memory), and a stream's versions are in position
-- order (a stream's next event is inserted only after the previous one committed, under the
-- stream lock), so the events below a position boundary are a version prefix of every stream:
-- a snapshot of the device states at the boundary is all a replay needs of what lies before it.
-- Time would not do: recorded_at is the transaction's start, and occurred_at is the client's.
--
-- What it costs: PostgreSQL's unique indexes on a partitioned table must contain the partition
-- key, so (app_id, event_id) and (app_id, user_id, device_id, version) are unique within each
-- partition only. Versions stay unique because the stream lock serialises every stream's
-- appends; idempotency holds across partitions because the append looks an id up in every
-- partition after taking the stream lock (EventLog.appendInTransaction), so a retry of an event
-- finds it wherever it is stored, until it is archived.
--
-- An existing log becomes the first partition as it is (no rows are copied).

LOCK TABLE events IN ACCESS EXCLUSIVE MODE;

-- How many positions each new partition holds; the owner may change it (new partitions only).
CREATE TABLE event_partitioning (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    rows_per_partition bigint NOT NULL CHECK (rows_per_partition >= 10)
);
INSERT INTO event_partitioning (rows_per_partition) VALUES (10000000);

ALTER TABLE events RENAME TO events_legacy;
DROP TRIGGER events_append_only ON events_legacy;
DROP TRIGGER events_no_truncate ON events_legacy;
ALTER TABLE events_legacy ALTER COLUMN position DROP IDENTITY;
ALTER TABLE events_legacy RENAME CONSTRAINT events_pkey TO events_legacy_pkey;
ALTER INDEX events_global_order RENAME TO events_legacy_global_order;
ALTER TABLE events_legacy RENAME CONSTRAINT events_app_id_event_id_key TO events_legacy_app_id_event_id_key;
ALTER TABLE events_legacy RENAME CONSTRAINT events_app_id_user_id_device_id_version_key TO events_legacy_app_id_user_id_device_id_version_key;
ALTER TABLE events_legacy RENAME CONSTRAINT events_app_id_fkey TO events_legacy_app_id_fkey;

CREATE SEQUENCE events_position_seq AS bigint;
SELECT setval('events_position_seq', coalesce((SELECT max(position) FROM events_legacy), 0) + 1, false);

CREATE TABLE events (
    -- Assigned at insert; NOT the commit order. Readers page on (tx_id, position).
    position bigint NOT NULL DEFAULT nextval('events_position_seq'),
    tx_id xid8 NOT NULL DEFAULT pg_current_xact_id(),
    app_id uuid NOT NULL REFERENCES apps (id),
    user_id text NOT NULL,
    device_id text NOT NULL,
    version bigint NOT NULL CONSTRAINT events_version_check CHECK (version >= 1),
    event_id uuid NOT NULL,
    type text NOT NULL,
    data jsonb NOT NULL,
    occurred_at timestamptz NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    outcome jsonb,
    PRIMARY KEY (position)
) PARTITION BY RANGE (position);
ALTER SEQUENCE events_position_seq OWNED BY events.position;

CREATE INDEX events_global_order ON events (tx_id, position);

CREATE TRIGGER events_append_only
    BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION locgate_refuse_event_change();

CREATE TRIGGER events_no_truncate
    BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION locgate_refuse_event_change();

-- Makes the partition [low, high) as a table of its own with the per-partition unique
-- constraints, then attaches it: ATTACH takes only a SHARE UPDATE EXCLUSIVE lock on `events`,
-- so appends and reads go on meanwhile (CREATE TABLE ... PARTITION OF would block them).
CREATE FUNCTION locgate_create_event_partition(low bigint, high bigint) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    name text := format('events_p%s', lpad(low::text, 12, '0'));
BEGIN
    EXECUTE format('CREATE TABLE %I (LIKE events INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', name);
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (position >= %s AND position < %s)',
                   name, name || '_range', low, high);
    EXECUTE format('ALTER TABLE %I ADD PRIMARY KEY (position)', name);
    EXECUTE format('ALTER TABLE %I ADD UNIQUE (app_id, event_id)', name);
    EXECUTE format('ALTER TABLE %I ADD UNIQUE (app_id, user_id, device_id, version)', name);
    EXECUTE format('CREATE INDEX ON %I (tx_id, position)', name);
    EXECUTE format('ALTER TABLE events ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)', name, low, high);
    -- The range is the partition bound now; the CHECK only spared ATTACH a scan.
    EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', name, name || '_range');
    RETURN name;
END
$$;

-- Keeps at least one whole empty partition ahead of the sequence, so an append never meets a
-- position without a partition. Run by `locgate migrate`, by every server once a minute, and by
-- an append that found no partition. Returns the partitions it created.
CREATE FUNCTION locgate_ensure_event_partitions() RETURNS SETOF text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    size bigint := (SELECT rows_per_partition FROM event_partitioning);
    next bigint;
    high bigint;
BEGIN
    -- One creator at a time (two servers' timers).
    PERFORM pg_advisory_xact_lock(7305896225427163914);
    SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END INTO next FROM events_position_seq;
    SELECT max((regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \(''?(\d+)''?\)'))[1]::bigint) INTO high
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'events'::regclass;
    high := coalesce(high, 1);
    WHILE high < next + size LOOP
        RETURN NEXT locgate_create_event_partition(high, high + size);
        high := high + size;
    END LOOP;
END
$$;

-- The existing log: its own partition up to the next multiple of the partition size above its
-- highest position (an empty log: up to the first multiple), then one empty partition ahead.
DO $$
DECLARE
    size bigint := (SELECT rows_per_partition FROM event_partitioning);
    high bigint := ((coalesce((SELECT max(position) FROM events_legacy), 0) / size) + 1) * size;
BEGIN
    EXECUTE format('ALTER TABLE events_legacy ADD CONSTRAINT events_legacy_range CHECK (position >= 1 AND position < %s)', high);
    EXECUTE format('ALTER TABLE events ATTACH PARTITION events_legacy FOR VALUES FROM (1) TO (%s)', high);
    ALTER TABLE events_legacy DROP CONSTRAINT events_legacy_range;
    ALTER TABLE events_legacy RENAME TO events_p000000000001;
END
$$;
SELECT count(*) FROM locgate_ensure_event_partitions();

-- What `locgate archive` exported and dropped: one row per archive, with the file's checksum.
-- An archive writes its snapshot rows first, in short transactions, and this row last, with
-- the partitions' DROP: rows below belong to an archive only once its row here exists.
CREATE TABLE event_archives (
    id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    archived_at timestamptz NOT NULL DEFAULT now(),
    before timestamptz NOT NULL,
    -- Every event with a position below this boundary is in this or an earlier archive.
    boundary bigint NOT NULL,
    partitions text[] NOT NULL,
    events bigint NOT NULL,
    file text NOT NULL,
    sha256 text NOT NULL,
    bytes bigint NOT NULL
);

-- Each archived stream's state after its last archived event: where a replay starts. A stream
-- has a row per archive that held its events; the newest recorded archive's row counts.
CREATE TABLE stream_snapshots (
    app_id uuid NOT NULL REFERENCES apps (id),
    user_id text NOT NULL,
    device_id text NOT NULL,
    archive_id bigint NOT NULL,
    version bigint NOT NULL,
    state_id bigint NOT NULL,
    milestones integer NOT NULL,
    -- The latest occurredAt of the stream's archived events: a state "as of" an earlier time
    -- lies in the archive.
    last_occurred_at timestamptz NOT NULL,
    PRIMARY KEY (app_id, user_id, device_id, archive_id)
);

-- The analytics counters each archive's events contributed, added back by a replay.
CREATE TABLE archived_rollups (
    archive_id bigint NOT NULL,
    app_id uuid NOT NULL REFERENCES apps (id),
    day date NOT NULL,
    platform text NOT NULL,
    os_major integer NOT NULL,
    app_version text NOT NULL,
    metric text NOT NULL,
    key text NOT NULL,
    count bigint NOT NULL,
    PRIMARY KEY (archive_id, app_id, metric, day, platform, os_major, app_version, key)
);

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'locgate_service') THEN
        REVOKE ALL ON events FROM locgate_service;
        GRANT SELECT, INSERT ON events TO locgate_service;
        GRANT USAGE ON SEQUENCE events_position_seq TO locgate_service;
        GRANT SELECT ON event_partitioning, event_archives, stream_snapshots, archived_rollups TO locgate_service;
        GRANT EXECUTE ON FUNCTION locgate_ensure_event_partitions() TO locgate_service;
    END IF;
END
$$;
REVOKE UPDATE, DELETE, TRUNCATE ON events FROM PUBLIC;
REVOKE ALL ON FUNCTION locgate_create_event_partition(bigint, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION locgate_ensure_event_partitions() FROM PUBLIC;

"""#
        ),
        (
            name: "009_dashboard_sessions.sql",
            text: #"""
-- The dashboard's sessions (SPEC §8), in the database so that every server sees a sign-in, a
-- sign-out and a revocation at once (no sticky sessions, §9).
--
-- The cookie holds a random session id (256 bits); only its SHA-256 is stored, as for keys, so
-- that a copy of this table signs nobody in. A session belongs to the key that signed in: it is
-- valid only while that key is (a lookup joins `api_keys` on `revoked_at IS NULL`), and only
-- while it was used in the last 12 hours (`last_used_at`, refreshed at most once a minute).
-- Ended sessions are deleted at sign-out, when they are next presented, and at each sign-in of
-- their app; a row that outlived its session signs nobody in.
CREATE TABLE dashboard_sessions (
    id_hash text PRIMARY KEY,
    app_id uuid NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    key_id uuid NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz NOT NULL DEFAULT now()
);
-- A sign-in deletes its app's idle sessions; a key's sessions are found by key.
CREATE INDEX dashboard_sessions_app ON dashboard_sessions (app_id, last_used_at);
CREATE INDEX dashboard_sessions_key ON dashboard_sessions (key_id);

-- Not the log: the service creates, refreshes and deletes sessions.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'locgate_service') THEN
        GRANT SELECT, INSERT, UPDATE, DELETE ON dashboard_sessions TO locgate_service;
    END IF;
END
$$;

"""#
        ),
        (
            name: "010_app_feed_index.sql",
            text: #"""
-- One app's change feed (`GET /v1/changes`) reads that app's events in global order,
-- `(tx_id, position)`, from a position on. Without an index that starts with the app, a small
-- app's feed from the start walks every app's log; with this one it reads its own events only.
CREATE INDEX events_app_global_order ON events (app_id, tx_id, position);

-- New partitions get the index before they are attached, as they get the others.
CREATE OR REPLACE FUNCTION locgate_create_event_partition(low bigint, high bigint) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    name text := format('events_p%s', lpad(low::text, 12, '0'));
BEGIN
    EXECUTE format('CREATE TABLE %I (LIKE events INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', name);
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (position >= %s AND position < %s)',
                   name, name || '_range', low, high);
    EXECUTE format('ALTER TABLE %I ADD PRIMARY KEY (position)', name);
    EXECUTE format('ALTER TABLE %I ADD UNIQUE (app_id, event_id)', name);
    EXECUTE format('ALTER TABLE %I ADD UNIQUE (app_id, user_id, device_id, version)', name);
    EXECUTE format('CREATE INDEX ON %I (tx_id, position)', name);
    EXECUTE format('CREATE INDEX ON %I (app_id, tx_id, position)', name);
    EXECUTE format('ALTER TABLE events ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)', name, low, high);
    -- The range is the partition bound now; the CHECK only spared ATTACH a scan.
    EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', name, name || '_range');
    RETURN name;
END
$$;

"""#
        ),
        (
            name: "011_device_bound_keys.sql",
            text: #"""
-- Device-bound ingest keys: an ingest key created with a token secret accepts events only
-- with a device token signed by that secret (HS256), and only for the user (and device) the
-- token names. The secret is stored as created: verifying an HMAC needs it. NULL: the key is
-- not bound.
ALTER TABLE api_keys ADD COLUMN token_secret text;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_token_secret_ingest CHECK (token_secret IS NULL OR scope = 'ingest');

"""#
        ),
        (
            name: "012_erasure.sql",
            text: #"""
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

"""#
        ),
        (
            name: "013_archive_keys_and_retention.sql",
            text: #"""
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

"""#
        ),
        (
            name: "014_erasure_pages.sql",
            text: #"""
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

"""#
        ),
        (
            name: "015_admin_audit.sql",
            text: #"""
-- Keys that can be listed, and the admin audit trail (SPEC §14).
--
-- `api_keys.prefix`: the key's first 8 characters (`lg_` and 5 more), stored when the key is
-- made, so that `GET /v1/keys` can show which key is which without the key. A key made before
-- this migration has none (NULL): only its SHA-256 was kept, and a hash gives nothing back.
-- `api_keys.last_used_at`: when the key last authenticated a request, to a minute; each process
-- writes it at most once a minute per key, in batches, off the requests' path.
--
-- `admin_audit`: every change to an app's configuration, written in the change's own
-- transaction (a change that fails leaves no entry). An entry names who made it (`actor_kind`
-- `key` with the key's id, `adminToken` or `cli`), what it did (`action`), what it acted on
-- (`target`: a key id, a feature key, the app id or an erasure id) and `details`, an object.
-- It holds no key, no hash of one and no user or device id, so that an erasure leaves it whole.
-- `id` pages the trail: writers of one app take turns on an advisory lock held until their
-- commit, so an app's entries commit in id order and a reader paging with `after` skips none.

ALTER TABLE api_keys ADD COLUMN prefix text CHECK (prefix IS NULL OR length(prefix) = 8);
ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz;

CREATE TABLE admin_audit (
    id bigserial PRIMARY KEY,
    app_id uuid NOT NULL REFERENCES apps (id),
    at timestamptz NOT NULL DEFAULT now(),
    actor_kind text NOT NULL CHECK (actor_kind IN ('key', 'adminToken', 'cli')),
    actor_key_id uuid,
    action text NOT NULL CHECK (action ~ '^[a-zA-Z]{1,64}$'),
    target text CHECK (length(target) <= 128),
    details jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(details) = 'object'),
    CONSTRAINT admin_audit_actor_key CHECK ((actor_kind = 'key') = (actor_key_id IS NOT NULL))
);
CREATE INDEX admin_audit_app ON admin_audit (app_id, id);

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'locgate_service') THEN
        -- The trail is only ever added to: no UPDATE or DELETE for the servers.
        GRANT SELECT, INSERT ON admin_audit TO locgate_service;
        EXECUTE format('GRANT USAGE ON SEQUENCE %s TO locgate_service', pg_get_serial_sequence('admin_audit', 'id'));
    END IF;
END
$$;

"""#
        ),
        (
            name: "017_device_erasure.sql",
            text: #"""
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

"""#
        ),
        (
            name: "018_install_id.sql",
            text: #"""
-- I1: the installation a device's app last reported (`installId` on `contextReported`) is kept
-- beside its state rather than in it. The state text is what the maintained counts group
-- devices by (`device_state_kinds`); an id of its own in every state would make each device a
-- kind of its own.
ALTER TABLE device_states ADD COLUMN install_id text;
-- A snapshot keeps it too, so that replay from a snapshot knows the installation it had.
ALTER TABLE stream_snapshots ADD COLUMN install_id text;

"""#
        ),
        (
            name: "019_retention_fold.sql",
            text: #"""
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

"""#
        ),
        (
            name: "020_append_path_foreign_keys.sql",
            text: #"""
-- The tables every append writes no longer check their app against `apps` row by row. Each
-- foreign key ran a trigger per inserted row (three rows an event, and a fourth table's counts),
-- each taking a KEY SHARE lock on the app's one row, which concurrent transactions turn into a
-- multixact: measured under single-event ingest, PostgreSQL spent 126 µs per event with them and
-- 79 without (Labs/ingest-cpu, one sitting), and the server answered 4,999 against 7,364 events/s.
-- What they guarded cannot happen: apps are never deleted, an append's app is the one its
-- authenticated key belongs to (`api_keys` keeps its foreign key), and a command given an app id
-- checks the app exists first. The other tables (catalog, analytics, erasure, archive) keep
-- theirs: they are written seldom.
ALTER TABLE events DROP CONSTRAINT events_app_id_fkey;
ALTER TABLE streams DROP CONSTRAINT streams_app_id_fkey;
ALTER TABLE device_states DROP CONSTRAINT device_states_app_id_fkey;
ALTER TABLE device_counts DROP CONSTRAINT device_counts_app_id_fkey;

"""#
        ),
        (
            name: "021_audit_entry_ids_and_sign_ins.sql",
            text: #"""
-- The admin audit trail's ids are opaque (SPEC §14 "Guard rails"), and dashboard sign-ins are
-- limited per key.
--
-- `admin_audit.entry_id`: the id `GET /v1/audit` shows for an entry and takes back as `after`
-- (the dashboard's Activity page as `before`): random, so that it tells nothing of other apps'
-- activity nor of how many entries came before. `id`, one sequence for every app, still orders
-- an app's entries and never leaves the server. Existing entries get an id each (the default is
-- evaluated per row).
--
-- `admin_audit_sign_ins`: a key's recent `dashboardSignIn` entries, which a sign-in counts (at
-- most 10 in any 60 s) before it starts a session.
ALTER TABLE admin_audit ADD COLUMN entry_id uuid NOT NULL DEFAULT gen_random_uuid();
CREATE UNIQUE INDEX admin_audit_entry ON admin_audit (entry_id);
CREATE INDEX admin_audit_sign_ins ON admin_audit (actor_key_id, at) WHERE action = 'dashboardSignIn';

"""#
        ),
        (
            name: "022_statistics_and_unused_states.sql",
            text: #"""
-- What outlives an erasure in the database's own bookkeeping (SPEC §13), and maintenance that
-- no longer holds the change feed back (SPEC §5, "Resources").
--
-- 1. No column statistics of ids or client text. ANALYZE (autovacuum's too) samples values
--    into `pg_statistic` (`pg_stats`): most common values and histograms that could keep an
--    erased user id, device id, event id, install id, app version, session key, purpose key or
--    the time a client said an event occurred.
--    Earlier releases gathered statistics again after every erasure, in one transaction that
--    held a transaction id while it sampled `events`: every app's change feed (which reads
--    below the oldest running transaction) stalled for as long, seconds on a large log. These
--    columns now get no statistics at all (`SET STATISTICS 0`), so no ANALYZE is needed for
--    privacy, and none runs after erasures. The statistics already gathered for them are
--    dropped with the same statement: `ALTER COLUMN ... TYPE` to the column's own type removes
--    a column's statistics (a non-superuser may not delete from `pg_statistic`) without
--    rewriting the table or rebuilding its indexes. The planner estimates these columns with
--    its defaults; every query on them goes through a unique index or the app's.
-- 2. New partitions of `events` get the same settings (`LIKE` does not copy them).
-- 3. `locgate_analyze_after_erasure` does nothing now; it stays for servers of the release
--    before, which call it, while they are replaced.
-- 4. States no device is in are forgotten. The maintained counts (`device_counts`) kept a row
--    at zero for every state devices had left, and `device_state_kinds` the state's JSON (app
--    version, session keys, purpose keys), after the devices that reported them were erased.
--    `locgate_forget_unused_states` deletes an app's rows of states no device of it is in and
--    no snapshot keeps, and then the states themselves that nothing refers to. It takes
--    `device_state_kinds` in SHARE mode: every append that moves a device into a state writes
--    that table in the same statement as the counts, so none is under way meanwhile, and none
--    can refer to a state between the check and the delete (appends wait for it, a moment).
--    `state_kind_checks` holds the states whose last snapshot an erasure deleted (a state kept
--    only by a snapshot has no row in the counts to find it by).
-- 5. `locgate_fold_erased_app_versions` decides every version given in one pass over each
--    table of counters (it looked each one up apart), so that a sweep over many versions is
--    cheap; what it decides is unchanged.

-- 1. The columns of ids and client text.
DO $$
DECLARE
    c record;
BEGIN
    FOR c IN
        SELECT * FROM (VALUES
            ('events', 'user_id', 'text'), ('events', 'device_id', 'text'), ('events', 'event_id', 'uuid'),
            ('events', 'data', 'jsonb'), ('events', 'outcome', 'jsonb'), ('events', 'occurred_at', 'timestamptz'),
            ('streams', 'user_id', 'text'), ('streams', 'device_id', 'text'),
            ('device_states', 'user_id', 'text'), ('device_states', 'device_id', 'text'), ('device_states', 'state', 'jsonb'),
            ('device_states', 'app_version', 'text'), ('device_states', 'install_id', 'text'),
            ('stream_snapshots', 'user_id', 'text'), ('stream_snapshots', 'device_id', 'text'),
            ('stream_snapshots', 'install_id', 'text'), ('stream_snapshots', 'last_occurred_at', 'timestamptz'),
            ('archive_keys', 'user_id', 'text'), ('archive_keys', 'device_id', 'text'), ('archive_keys', 'key', 'bytea'),
            ('erasure_work', 'user_id', 'text'), ('erasure_work', 'device_id', 'text'), ('erasure_work', 'device_ids', 'text[]'),
            ('erasure_devices', 'device_id', 'text'),
            ('device_state_kinds', 'state', 'jsonb'),
            ('device_counts', 'app_version', 'text'),
            ('analytics_rollups', 'app_version', 'text'), ('analytics_totals', 'app_version', 'text'),
            ('erasure_rollups', 'app_version', 'text'), ('archived_rollups', 'app_version', 'text')
        ) AS t(table_name, column_name, column_type)
    LOOP
        -- On `events` both recurse into every partition.
        EXECUTE format('ALTER TABLE %I ALTER COLUMN %I SET STATISTICS 0, ALTER COLUMN %I TYPE %s',
                       c.table_name, c.column_name, c.column_name, c.column_type);
    END LOOP;
END
$$;

-- 2. New partitions: as migration 010 made them, with no statistics of ids and client text.
CREATE OR REPLACE FUNCTION locgate_create_event_partition(low bigint, high bigint) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    name text := format('events_p%s', lpad(low::text, 12, '0'));
BEGIN
    EXECUTE format('CREATE TABLE %I (LIKE events INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', name);
    EXECUTE format('ALTER TABLE %I ALTER COLUMN user_id SET STATISTICS 0, ALTER COLUMN device_id SET STATISTICS 0, '
                   'ALTER COLUMN event_id SET STATISTICS 0, ALTER COLUMN data SET STATISTICS 0, '
                   'ALTER COLUMN outcome SET STATISTICS 0, ALTER COLUMN occurred_at SET STATISTICS 0', name);
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (position >= %s AND position < %s)',
                   name, name || '_range', low, high);
    EXECUTE format('ALTER TABLE %I ADD PRIMARY KEY (position)', name);
    EXECUTE format('ALTER TABLE %I ADD UNIQUE (app_id, event_id)', name);
    EXECUTE format('ALTER TABLE %I ADD UNIQUE (app_id, user_id, device_id, version)', name);
    EXECUTE format('CREATE INDEX ON %I (tx_id, position)', name);
    EXECUTE format('CREATE INDEX ON %I (app_id, tx_id, position)', name);
    EXECUTE format('ALTER TABLE events ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)', name, low, high);
    -- The range is the partition bound now; the CHECK only spared ATTACH a scan.
    EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', name, name || '_range');
    RETURN name;
END
$$;

-- 3. Nothing to gather after an erasure any more.
CREATE OR REPLACE FUNCTION locgate_analyze_after_erasure() RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    NULL;
END
$$;

-- 4. States no device is in.
-- The counts of a state in every app and lane, and the snapshots that keep a state: what the
-- check before deleting a state looks up.
CREATE INDEX device_counts_state ON device_counts (state_id);
CREATE INDEX stream_snapshots_state ON stream_snapshots (state_id);

CREATE TABLE state_kind_checks (
    state_id bigint PRIMARY KEY
);

-- Of the states `p_states`: the app's rows of those no device of the app is in (their lanes
-- sum to zero) and no snapshot keeps are deleted, then every state of `p_states` that no row
-- of the counts (of any app) and no snapshot refers to, and the states' entries in
-- `state_kind_checks`. The caller holds the analytics rollup's lock (erasure pages, retention
-- batches and rebuilds, which change the counts and snapshots otherwise than appends do, hold
-- it too) and nothing an append may wait for. Returns the states deleted.
CREATE FUNCTION locgate_forget_unused_states(p_app uuid, p_states bigint[]) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    unused bigint[];
    forgotten integer;
BEGIN
    -- Appends under way that write the counts finish first; new ones wait until the commit.
    LOCK TABLE device_state_kinds IN SHARE MODE;
    SELECT coalesce(array_agg(z.state_id ORDER BY z.state_id), '{}') INTO unused
    FROM (SELECT state_id FROM device_counts
          WHERE app_id = p_app AND state_id = ANY(p_states)
          GROUP BY state_id HAVING sum(devices) = 0) z
    WHERE NOT EXISTS (SELECT 1 FROM stream_snapshots s WHERE s.state_id = z.state_id);
    DELETE FROM device_counts WHERE app_id = p_app AND state_id = ANY(unused);
    DELETE FROM device_state_kinds k
    WHERE k.state_id = ANY(p_states)
      AND NOT EXISTS (SELECT 1 FROM device_counts d WHERE d.state_id = k.state_id)
      AND NOT EXISTS (SELECT 1 FROM stream_snapshots s WHERE s.state_id = k.state_id);
    GET DIAGNOSTICS forgotten = ROW_COUNT;
    DELETE FROM state_kind_checks WHERE state_id = ANY(p_states);
    RETURN forgotten;
END
$$;

-- 5. The "(erased)" fold (migrations 014, 019), each table of counters read once for all the
-- versions given.
CREATE OR REPLACE FUNCTION locgate_fold_erased_app_versions(p_app uuid, p_candidates text[]) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    folded text[];
BEGIN
    WITH c AS (
        SELECT DISTINCT v FROM unnest(p_candidates) AS u(v) WHERE v IS NOT NULL AND v NOT IN ('(erased)', 'unknown')),
    -- Versions a device of the app is in a state with now: kept, and their counters not read.
    live AS (
        SELECT DISTINCT app_version AS v
        FROM (SELECT app_version, state_id FROM device_counts
              WHERE app_id = p_app AND app_version IN (SELECT v FROM c)
              GROUP BY app_version, state_id HAVING sum(devices) <> 0) d),
    gone AS (SELECT v FROM c WHERE NOT EXISTS (SELECT 1 FROM live WHERE live.v = c.v)),
    -- The others' counters, and the counters of their events that are gone (erased, or erased
    -- by retention).
    t AS (
        SELECT app_version AS v, platform, os_major, metric, key, sum(count) AS n FROM analytics_totals
        WHERE app_id = p_app AND app_version IN (SELECT v FROM gone) GROUP BY 1, 2, 3, 4, 5),
    e AS (
        SELECT v, platform, os_major, metric, key, sum(n) AS n
        FROM (SELECT app_version AS v, platform, os_major, metric, key, count AS n FROM erasure_rollups
              WHERE app_id = p_app AND app_version IN (SELECT v FROM gone)
              UNION ALL
              SELECT r.app_version, r.platform, r.os_major, r.metric, r.key, r.count
              FROM archived_rollups r JOIN event_archives a ON a.id = r.archive_id
              WHERE r.app_id = p_app AND r.app_version IN (SELECT v FROM gone) AND a.kind = 'retention') erased
        GROUP BY 1, 2, 3, 4, 5),
    -- Versions with a counter of an event that is still in the log (or was archived).
    kept AS (
        SELECT DISTINCT v FROM t FULL JOIN e USING (v, platform, os_major, metric, key)
        WHERE coalesce(t.n, 0) <> coalesce(e.n, 0))
    SELECT coalesce(array_agg(gone.v ORDER BY gone.v), '{}') INTO folded
    FROM gone
    WHERE NOT EXISTS (SELECT 1 FROM kept WHERE kept.v = gone.v);
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

REVOKE ALL ON FUNCTION locgate_forget_unused_states(uuid, bigint[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION locgate_fold_erased_app_versions(uuid, text[]) FROM PUBLIC;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'locgate_service') THEN
        -- An erasure page records the states of the snapshots it deletes; the function above
        -- deletes what it checked.
        GRANT SELECT, INSERT ON state_kind_checks TO locgate_service;
        GRANT EXECUTE ON FUNCTION locgate_forget_unused_states(uuid, bigint[]) TO locgate_service;
        -- Archived counters are added to (an upsert), as the live rollups are.
        GRANT UPDATE ON archived_rollups TO locgate_service;
    END IF;
END
$$;

"""#
        ),
        (
            name: "023_experiments.sql",
            text: #"""
-- Prompt experiments (SPEC §16): their definitions, the units exposed to them, and the counts
-- their results and guard read.
--
-- `experiments`: one row per experiment of an app. `definition` is the domain's stored form
-- (`ExperimentDefinition`'s encoding: description, prompt, variants, control, eligible, guard,
-- defaults filled in), read back through the same checks a PUT passes; the columns beside it
-- are its life (`Experiment`): running until an operator or the guard stops it, with the
-- winner every device gets from then on. `stopped_position` is the log's global position at
-- the stop: an answer to a prompt shown at a later position is not counted (SPEC §16: a
-- prompt "shown ... before the experiment stopped"), whichever server appends it. `guard_checked_at` lets one server take
-- each guarded experiment whose check is due (a minute, SPEC §16) with FOR UPDATE SKIP LOCKED,
-- so that servers share the checks and one stop makes one audit entry. A key that a feature
-- of the app uses is refused by the service, which holds the app's catalog lock for both
-- tables (`keyInUse`), as it counts the 50 experiments an app may have.
--
-- `experiment_exposures`: a unit's exposure, recorded once, at its first evaluation, durably
-- before the answer (group-committed like appends), and never moved: later evaluations answer
-- its variant whatever the weights or the device have become (sticky). The key is the unit
-- (`install:ID` or `device:USER/DEVICE`, `ExperimentUnit`), so a device counts once per
-- installation however many streams or evaluations it has. `user_id`/`device_id` are the
-- stream it was first evaluated on: what erasure and a person's export find it by.
-- `exposed_position` is the log's global position then: only answers to prompts shown at a
-- later position count. `replaced_position` is set when I1's reinstall replaces the unit (a
-- new `installId` on one of its streams): answers after it do not count, and the stream's next
-- evaluation exposes the new installation's unit. The rest is the unit's first qualifying
-- answer, written once (`answered` from false to true): its position, the prompt kind it
-- answered (a later `answerCorrected` of that prompt may change `granted`, O2), and whether it
-- granted what the prompt asked.
--
-- `experiment_counts`: exposed, answered and granted per variant, added to in the transaction
-- that records the exposure or the answer, so that results (within 100 ms for a million
-- exposed units, SPEC §16) and the guard read at most 10 variants × the lanes, never the
-- exposures. Concurrent writers use different lanes (as `device_counts`, migration 006: the
-- backend's pid modulo 16), so they never wait on each other's counter rows; a reader sums the
-- lanes. A correction can take a grant back, so a lane's `granted` may go below zero; the sums
-- do not. Erasure and retention delete exposures but leave the counts, as analytics keep
-- theirs (SPEC §13): the counts hold no id.
--
-- Deleting an experiment removes its exposures and counts with it (ON DELETE CASCADE), in the
-- DELETE's own transaction, so nothing can count towards a key that is gone or that a new
-- experiment reuses. The foreign keys cost each new exposure a KEY SHARE lock on its
-- experiment's row (migration 020 removed such keys from the tables every append writes):
-- exposures are written once per unit, not per event, and group-committed, so the cost is per
-- new device, and the counts' upserts take the lock only when a lane's row is first made.
CREATE TABLE experiments (
    app_id uuid NOT NULL REFERENCES apps (id),
    key text NOT NULL CHECK (key ~ '^[A-Za-z0-9._-]{1,64}$'),
    definition jsonb NOT NULL CHECK (jsonb_typeof(definition) = 'object'),
    state text NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'stopped')),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    stopped_at timestamptz,
    stopped_position bigint,
    stop_reason text CHECK (stop_reason IN ('operator', 'guard')),
    winner text CHECK (winner ~ '^[A-Za-z0-9._-]{1,64}$'),
    guard_checked_at timestamptz,
    PRIMARY KEY (app_id, key),
    -- Stopped exactly when the stop's time, reason and winner are known.
    CONSTRAINT experiments_stop CHECK (
        (state = 'running' AND stopped_at IS NULL AND stop_reason IS NULL AND winner IS NULL)
        OR (state = 'stopped' AND stopped_at IS NOT NULL AND stop_reason IS NOT NULL AND winner IS NOT NULL))
);

CREATE TABLE experiment_exposures (
    app_id uuid NOT NULL,
    experiment_key text NOT NULL,
    unit text NOT NULL CHECK (unit LIKE 'install:_%' OR unit LIKE 'device:_%/_%'),
    variant text NOT NULL CHECK (variant ~ '^[A-Za-z0-9._-]{1,64}$'),
    exposed_at timestamptz NOT NULL DEFAULT now(),
    exposed_position bigint NOT NULL,
    user_id text NOT NULL,
    device_id text NOT NULL,
    replaced_position bigint,
    answered boolean NOT NULL DEFAULT false,
    answer_position bigint,
    answer_prompt text,
    granted boolean,
    PRIMARY KEY (app_id, experiment_key, unit),
    FOREIGN KEY (app_id, experiment_key) REFERENCES experiments (app_id, key) ON DELETE CASCADE,
    -- The first qualifying answer is known whole or not at all.
    CONSTRAINT experiment_exposures_answer CHECK (
        (answered AND answer_position IS NOT NULL AND answer_prompt IS NOT NULL AND granted IS NOT NULL)
        OR (NOT answered AND answer_position IS NULL AND answer_prompt IS NULL AND granted IS NULL))
);
-- A stream's exposures: its evaluations (the units of `ExperimentUnit.candidates`), erasure of
-- a person or a device, a person's export.
CREATE INDEX experiment_exposures_stream ON experiment_exposures (app_id, user_id, device_id);
-- What an answer may count for: the app's exposures of a unit still waiting for their first
-- answer. An answer looks up its stream's units here (on any stream of the unit), in every
-- running experiment of the app at once.
CREATE INDEX experiment_exposures_waiting ON experiment_exposures (app_id, unit)
    WHERE NOT answered AND replaced_position IS NULL;

CREATE TABLE experiment_counts (
    app_id uuid NOT NULL,
    experiment_key text NOT NULL,
    variant text NOT NULL,
    lane smallint NOT NULL CHECK (lane >= 0),
    exposed bigint NOT NULL DEFAULT 0,
    answered bigint NOT NULL DEFAULT 0,
    granted bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (app_id, experiment_key, variant, lane),
    FOREIGN KEY (app_id, experiment_key) REFERENCES experiments (app_id, key) ON DELETE CASCADE
) WITH (fillfactor = 50);  -- room on the page for HOT updates: the counts change all the time

-- No column statistics of ids or client text (migration 022): ANALYZE would sample user and
-- device ids and install ids (in `unit`) into `pg_statistic`, where an erasure cannot reach.
ALTER TABLE experiment_exposures
    ALTER COLUMN unit SET STATISTICS 0,
    ALTER COLUMN user_id SET STATISTICS 0,
    ALTER COLUMN device_id SET STATISTICS 0;

-- The guard stops an experiment as itself, not as a key or the command line: its audit entry's
-- actor is `{"guard": true}` (SPEC §16).
ALTER TABLE admin_audit DROP CONSTRAINT admin_audit_actor_kind_check;
ALTER TABLE admin_audit ADD CONSTRAINT admin_audit_actor_kind_check
    CHECK (actor_kind IN ('key', 'adminToken', 'cli', 'guard'));

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'locgate_service') THEN
        -- Experiments are created, replaced, stopped and deleted through the API and the CLI.
        GRANT SELECT, INSERT, UPDATE, DELETE ON experiments TO locgate_service;
        -- Exposures are recorded, answered, marked replaced, and deleted by erasure and
        -- retention (and with their experiment).
        GRANT SELECT, INSERT, UPDATE, DELETE ON experiment_exposures TO locgate_service;
        -- The counts are only ever added to (upserts): no DELETE for the servers. A deleted
        -- experiment's rows go by the cascade, which runs as the table's owner.
        GRANT SELECT, INSERT, UPDATE ON experiment_counts TO locgate_service;
    END IF;
END
$$;

"""#
        ),
        (
            name: "024_decision_forms.sql",
            text: #"""
-- Each distinct state's decision form (SPEC §15: a preview's time and memory stay linear in the
-- devices whatever states they report).
--
-- A preview of a catalog change, and the dashboard's feature coverage, decide every distinct
-- state of an app. An ingest key can give every device a state of its own (an app version,
-- purpose keys, session keys of its own): decoding a million such states, each up to a few
-- kilobytes of JSON, took far longer than the 5 s a preview has. A decision reads only part of
-- a state (`DeviceState.decisionForm` in the domain says which, and a property test holds it
-- to that): those states share a few forms, and a device's app version is compared with the
-- floors on its own (`device_counts.app_version`).
--
-- The preview reads the form's id and the content hash from the counts themselves
-- (`device_counts.form_id`, `content_hash`), one pass over the app's rows with no join: the
-- writer fills them for every row of a state it forms, and then every row written since
-- (a state's new lane) that is still without (`device_counts_unformed`). A row without them is
-- looked up in `state_forms` as it is read.
--
-- `state_forms` gives each state of `device_state_kinds` its form's id and the hash of its
-- content (`jsonb_hash_extended`, what the preview's samples look devices up by), and
-- `decision_forms` each form once. A state gets its row here when it is added (the trigger
-- below, on every path that adds states: appends, rebuilds, snapshots restored), with the form
-- to be filled by the servers' background writer (`DecisionFormWriter`), off the append path:
-- an append pays one row for a state never seen before, nothing for a known one. Until its
-- form is written, a state is read and decided whole, as before. The rows of a state leave
-- with it (ON DELETE CASCADE, so erasure's `locgate_forget_unused_states` takes them); a form
-- holds none of the client's text (no app version, keys or ids), only what decisions read, so
-- forms stay.
CREATE TABLE decision_forms (
    form_id bigint PRIMARY KEY,
    form jsonb NOT NULL
);

CREATE TABLE state_forms (
    state_id bigint PRIMARY KEY REFERENCES device_state_kinds (state_id) ON DELETE CASCADE,
    -- hashtextextended(form::text, 0) as state ids are made; 0 for a state this release cannot
    -- read. NULL until the writer has been by.
    form_id bigint,
    content_hash bigint
);

-- The writer's queue: the states still without a form.
CREATE INDEX state_forms_unwritten ON state_forms (state_id) WHERE form_id IS NULL;

ALTER TABLE device_counts ADD COLUMN form_id bigint, ADD COLUMN content_hash bigint;
-- Count rows written after their state was formed. An append's update of a count leaves
-- `form_id` as it is, so it stays a HOT update.
CREATE INDEX device_counts_unformed ON device_counts (state_id) WHERE form_id IS NULL;

CREATE FUNCTION locgate_state_added() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    INSERT INTO state_forms (state_id) VALUES (NEW.state_id) ON CONFLICT (state_id) DO NOTHING;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION locgate_state_added() FROM PUBLIC;

-- A row trigger fires for the rows inserted, not for those ON CONFLICT DO NOTHING skipped: an
-- append into a known state runs nothing.
CREATE TRIGGER device_state_kinds_added AFTER INSERT ON device_state_kinds
FOR EACH ROW EXECUTE FUNCTION locgate_state_added();

INSERT INTO state_forms (state_id) SELECT state_id FROM device_state_kinds;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'locgate_service') THEN
        GRANT SELECT, INSERT ON decision_forms TO locgate_service;
        GRANT SELECT, UPDATE ON state_forms TO locgate_service;
    END IF;
END
$$;

"""#
        ),
        (
            name: "025_device_states_app_version.sql",
            text: #"""
-- Devices by app version (SPEC §15: a preview answers within 5 s whatever the devices report).
--
-- A preview names a few devices of each change (`sample`), looked for among the devices of the
-- change's first states: rows of `device_states` with one of those states' app versions and
-- statuses whose state hashes to one of theirs. Without an index the look is a pass over every
-- device of the app: at a million planted devices, each in a state of its own, that pass read
-- 2 GB of `device_states` and took 3.3 s with a cold cache (0.9 s warm), the larger part of a
-- preview. With it, the look reads the rows of those versions only. `app_version` keeps no
-- statistics (migration 022), and a plain column's index adds none.
--
-- The index is led by the version, (app_version, app_id), not (app_id, app_version): a device
-- is read by (app_id, user_id, device_id), and the planner, which knows nothing of
-- `app_version`'s values and little of a new app's rows, took an index led by `app_id` for
-- those reads as readily as the primary key (a benchmark's copy of this table read every row of
-- its app on every lookup). An index led by the version cannot serve them; its `app_id` keeps a
-- version that many apps share ("1.0.0") from reading other apps' devices. Devices that
-- reported no version are not in it: the preview reads those apart.
--
-- What it costs appends: an index entry for a new device that reported a version, and one when
-- a device's app version changes; other updates of a device stay HOT as before (no indexed
-- column changes).
CREATE INDEX device_states_app_version ON device_states (app_version, app_id) WHERE app_version IS NOT NULL;

"""#
        ),
    ]
}
