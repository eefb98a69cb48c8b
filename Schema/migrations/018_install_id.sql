-- I1: the installation a device's app last reported (`installId` on `contextReported`) is kept
-- beside its state rather than in it. The state text is what the maintained counts group
-- devices by (`device_state_kinds`); an id of its own in every state would make each device a
-- kind of its own.
ALTER TABLE device_states ADD COLUMN install_id text;
-- A snapshot keeps it too, so that replay from a snapshot knows the installation it had.
ALTER TABLE stream_snapshots ADD COLUMN install_id text;
