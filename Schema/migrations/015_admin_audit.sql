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
