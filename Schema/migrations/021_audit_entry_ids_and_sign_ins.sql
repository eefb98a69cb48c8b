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
