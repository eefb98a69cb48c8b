-- pgbench: one single-row INSERT per transaction into a table shaped like events.
INSERT INTO bench_events (app_id, user_id, device_id, version, event_id, type, data, occurred_at, outcome)
VALUES ('00000000-0000-0000-0000-000000000001', 'bench', gen_random_uuid()::text, 1, gen_random_uuid(), 'appStateChanged',
        '{"state": "foreground"}', now(), '{"effects": []}');
