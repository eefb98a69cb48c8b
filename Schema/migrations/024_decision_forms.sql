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
