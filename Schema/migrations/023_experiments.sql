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
