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
