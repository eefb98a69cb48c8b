"""The `locgate` commands against the e2e database (Deploy/e2e): a command given an app id that
does not exist refuses before it writes anything (the log's tables take their app on trust,
docs/operations.md)."""
import os
import subprocess
import uuid

LOCGATE = os.environ["LOCGATE_E2E_LOCGATE"]
DATABASE = os.environ["LOCGATE_E2E_DATABASE"]


def psql(sql):
    url = os.environ["LOCGATE_DATABASE_URL"]
    return subprocess.run(["psql", "-qAtX", "-d", url, "-c", f"\\c {DATABASE}", "-c", sql],
                          capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]


def test_simulate_refuses_an_unknown_app_and_appends_nothing():
    app = str(uuid.uuid4())
    run = subprocess.run([LOCGATE, "simulate", "--app", app, "--devices", "3", "--database-name", DATABASE,
                          "--log-level", "warning"], capture_output=True, text=True, timeout=60)
    assert run.returncode != 0, run.stdout
    assert f"no app {app}" in run.stderr, run.stderr
    for table in ["events", "streams", "device_states", "device_counts"]:
        assert psql(f"SELECT count(*) FROM {table} WHERE app_id = '{app}'") == "0", table
