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
