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
