-- The tables every append writes no longer check their app against `apps` row by row. Each
-- foreign key ran a trigger per inserted row (three rows an event, and a fourth table's counts),
-- each taking a KEY SHARE lock on the app's one row, which concurrent transactions turn into a
-- multixact: measured under single-event ingest, PostgreSQL spent 126 µs per event with them and
-- 79 without (Labs/ingest-cpu, one sitting), and the server answered 4,999 against 7,364 events/s.
-- What they guarded cannot happen: apps are never deleted, an append's app is the one its
-- authenticated key belongs to (`api_keys` keeps its foreign key), and a command given an app id
-- checks the app exists first. The other tables (catalog, analytics, erasure, archive) keep
-- theirs: they are written seldom.
ALTER TABLE events DROP CONSTRAINT events_app_id_fkey;
ALTER TABLE streams DROP CONSTRAINT streams_app_id_fkey;
ALTER TABLE device_states DROP CONSTRAINT device_states_app_id_fkey;
ALTER TABLE device_counts DROP CONSTRAINT device_counts_app_id_fkey;
