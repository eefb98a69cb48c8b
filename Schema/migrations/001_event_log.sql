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
