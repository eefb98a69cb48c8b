-- The (app_id, status) index led the planner astray: for a new app, whose statistics estimate
-- one row, it probed devices by app_id through this index and filtered the rest, scanning
-- every device of the app for each one (330 ms per 1,000-event append at 20,000 devices).
-- Per-device probes need the primary key alone; the status analytics read the app's rows
-- through the primary key's app_id prefix.
DROP INDEX IF EXISTS device_states_status;
