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
