"""The `locgate` commands against the e2e database (Deploy/e2e): a command given an app id that
does not exist refuses before it writes anything (the log's tables take their app on trust,
docs/operations.md), saying "no such app" and exiting non-zero; a command that fails prints the
error's code and message; `features disable` and `enable` change only the kill switch;
`analytics location-button` prints the API's location button counts (SPEC §12); `experiments`
puts, lists, stops and deletes experiments and prints their results (SPEC §16)."""
import json
import os
import subprocess
import urllib.request
import uuid

LOCGATE = os.environ["LOCGATE_E2E_LOCGATE"]
DATABASE = os.environ["LOCGATE_E2E_DATABASE"]
PRIMER = json.dumps({"description": "A priming screen first", "prompt": "whenInUse",
                     "variants": [{"key": "dialog", "weight": 50}, {"key": "primer", "weight": 50}]})


def psql(sql):
    url = os.environ["LOCGATE_DATABASE_URL"]
    return subprocess.run(["psql", "-qAtX", "-d", url, "-c", f"\\c {DATABASE}", "-c", sql],
                          capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]


def locgate(*args, timeout=60):
    return subprocess.run([LOCGATE, *args, "--database-name", DATABASE, "--log-level", "warning"],
                          capture_output=True, text=True, timeout=timeout)


def test_simulate_refuses_an_unknown_app_and_appends_nothing():
    app = str(uuid.uuid4())
    run = locgate("simulate", "--app", app, "--devices", "3")
    assert run.returncode != 0, run.stdout
    assert f"no such app {app}" in run.stderr, run.stderr
    for table in ["events", "streams", "device_states", "device_counts"]:
        assert psql(f"SELECT count(*) FROM {table} WHERE app_id = '{app}'") == "0", table


def test_every_command_with_an_app_refuses_an_unknown_one():
    app = str(uuid.uuid4())
    commands = [
        ["keys", "create", "--app", app, "--scope", "read"],
        ["keys", "list", "--app", app],
        ["features", "put", "nearby", "--app", app, "--requires", "whenInUse"],
        ["features", "preview", "nearby", "--app", app, "--requires", "whenInUse"],
        ["features", "disable", "nearby", "--app", app],
        ["features", "enable", "nearby", "--app", app],
        ["export", "--app", app, "--user", "someone"],
        ["erase", "--app", app, "--user", "someone", "--wait", "1"],
        ["erase", "--app", app, "--user", "someone", "--device", "phone", "--wait", "1"],
        ["retention", "run", "--app", app],
        ["retention", "run", "--app", app, "--dry-run"],
        ["analytics", "prompts", "--app", app],
        ["analytics", "location-button", "--app", app],
        ["experiments", "list", "--app", app],
        ["experiments", "put", "primer", "--app", app, "--body", PRIMER],
        ["experiments", "stop", "primer", "--app", app],
        ["experiments", "delete", "primer", "--app", app],
        ["experiments", "results", "primer", "--app", app],
        ["replay", "--app", app],
        ["verify", "--app", app],
    ]
    for command in commands:
        run = locgate(*command)
        name = " ".join(command[:2])
        assert run.returncode != 0, f"{name} exited 0: {run.stdout}"
        assert f"no such app {app}" in run.stderr, f"{name}: {run.stderr}"
        assert "internalError" not in run.stderr, f"{name}: {run.stderr}"
        # Nothing that could read as an answer: an export of an unknown app is no empty export.
        assert run.stdout.strip() == "", f"{name} printed {run.stdout}"
    for table in ["api_keys", "features", "erasures", "admin_audit", "experiments"]:
        assert psql(f"SELECT count(*) FROM {table} WHERE app_id = '{app}'") == "0", table


def create_app(name):
    run = locgate("apps", "create", name)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)["appId"]


def stored(app, key):
    return json.loads(psql(f"SELECT definition::text FROM features WHERE app_id = '{app}' AND key = '{key}'"))


def last_audit(app):
    row = psql(f"SELECT json_build_array(action, actor_kind, details)::text FROM admin_audit "
               f"WHERE app_id = '{app}' ORDER BY id DESC LIMIT 1")
    return json.loads(row)


def test_features_disable_and_enable_change_only_disabled():
    app = create_app("kill switch from the command line")
    put = locgate("features", "put", "nearby", "--app", app, "--requires", "always", "--service", "regionMonitoring",
                  "--accuracy", "full", "--description", "Lights on when you get home", "--min-app-version", "5.2")
    assert put.returncode == 0, put.stderr
    # Fields the command line's put does not set, set here so that their keeping shows.
    psql(f"""UPDATE features SET definition = definition || '{{"delivery": "modern", "background": false}}'
             WHERE app_id = '{app}' AND key = 'nearby' RETURNING key""")
    before = stored(app, "nearby")

    disabled = locgate("features", "disable", "nearby", "--app", app)
    assert disabled.returncode == 0, disabled.stderr
    printed = json.loads(disabled.stdout)
    assert printed == {**before, "disabled": True}, printed
    assert stored(app, "nearby") == {**before, "disabled": True}
    action, actor, details = last_audit(app)
    assert (action, actor) == ("featureDisabled", "cli")
    assert details == {"changes": {"disabled": {"from": False, "to": True}}}, details

    enabled = locgate("features", "enable", "nearby", "--app", app)
    assert enabled.returncode == 0, enabled.stderr
    assert json.loads(enabled.stdout) == before
    assert stored(app, "nearby") == before
    action, actor, details = last_audit(app)
    assert (action, actor, details) == ("featureEnabled", "cli", {"changes": {"disabled": {"from": True, "to": False}}})


def test_a_failing_command_prints_its_code_and_message():
    app = create_app("failures")
    run = locgate("features", "disable", "ghost", "--app", app)
    assert run.returncode != 0, run.stdout
    assert "notFound" in run.stderr and "no feature ghost" in run.stderr, run.stderr
    assert psql(f"SELECT count(*) FROM admin_audit WHERE app_id = '{app}' AND action <> 'appCreated'") == "0"


def test_features_put_says_it_replaces_the_whole_feature():
    run = subprocess.run([LOCGATE, "features", "put", "--help"], capture_output=True, text=True, timeout=30)
    assert run.returncode == 0, run.stderr
    text = " ".join(run.stdout.split())
    assert "replace it whole" in text and "features disable KEY" in text, run.stdout


def append(key, events):
    """Appends a batch through the live server (Deploy/e2e's, on the same database)."""
    request = urllib.request.Request(
        os.environ["LOCGATE_E2E_URL"] + "/v1/events", method="POST", data=json.dumps({"events": events}).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def test_analytics_location_button():
    """`locgate analytics location-button` (SPEC §12): the API's counts, grouped, filtered and as CSV."""
    created = locgate("apps", "create", "location button analytics")
    assert created.returncode == 0, created.stderr
    app, key = json.loads(created.stdout)["appId"], json.loads(created.stdout)["apiKey"]

    def event(device, at, type_, data):
        return {"id": str(uuid.uuid4()), "userId": "u-1", "deviceId": device, "occurredAt": at, "type": type_, "data": data}

    context = {"platform": "android", "apiLevel": 37, "targetSdk": 37, "appVersion": "5.0",
               "declaredPermissions": ["coarse", "fine", "locationButton"]}
    results = append(key, [
        # A session, the consent dialog answered Allow (B3), then a grant while precise is held (B2).
        event("pixel", "2026-11-21T08:00:00Z", "contextReported", context),
        event("pixel", "2026-11-21T09:00:00Z", "locationButtonSession", {"state": "opened"}),
        event("pixel", "2026-11-21T09:01:00Z", "locationButtonResult", {"granted": True}),
        event("pixel", "2026-11-21T09:02:00Z", "locationButtonResult", {"granted": True}),
        # The dialog answered Don't allow (B4).
        event("tablet", "2026-11-22T08:00:00Z", "contextReported", context),
        event("tablet", "2026-11-22T09:00:00Z", "locationButtonResult", {"granted": False}),
    ])["results"]
    assert [effect["kind"] for effect in results[2]["effects"]][:2] == ["promptShown", "answerInferred"], results

    header = "sessions,failures,results,prompted,direct,alreadyGranted,denied,blocked,notGrantable"
    run = locgate("analytics", "location-button", "--app", app)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == {"rows": [{"sessions": 1, "failures": 0, "results": 3, "prompted": 2, "direct": 0,
                                                "alreadyGranted": 1, "denied": 1, "blocked": 0, "notGrantable": 0}]}, run.stdout
    run = locgate("analytics", "location-button", "--app", app, "--group-by", "day", "--format", "csv")
    assert run.returncode == 0, run.stderr
    assert run.stdout == f"day,{header}\n2026-11-21,1,0,2,1,0,1,0,0,0\n2026-11-22,0,0,1,1,0,0,1,0,0\n", run.stdout
    run = locgate("analytics", "location-button", "--app", app, "--from", "2026-11-22", "--format", "csv")
    assert run.stdout == f"{header}\n0,0,1,1,0,0,1,0,0\n", run.stdout
    run = locgate("analytics", "location-button", "--app", app, "--platform", "iOS", "--format", "csv")
    assert run.stdout == f"{header}\n0,0,0,0,0,0,0,0,0\n", run.stdout
    # The dialog's row of prompts.
    run = locgate("analytics", "prompts", "--app", app)
    rows = {row["prompt"]: row for row in json.loads(run.stdout)["rows"]}
    assert rows["locationButton"]["choices"] == {"allow": 1, "dontAllow": 1}, run.stdout
    assert rows["locationButton"]["grantRate"] == 0.5 and rows["locationButton"]["shown"] == 2, run.stdout
    # The kinds are the API's.
    run = locgate("analytics", "locationButton", "--app", app)
    assert run.returncode != 0 and "location-button" in run.stderr, run.stderr


def test_experiments_put_list_results_stop_delete():
    """`locgate experiments` (SPEC §16): a put from --body and from a file on standard input, the
    list by key, the results as JSON and CSV, a stop with a winner, a delete; each change in the
    audit trail with actor cli; a refused body stores nothing."""
    app = create_app("experiments from the command line")
    put = locgate("experiments", "put", "primer", "--app", app, "--body", PRIMER)
    assert put.returncode == 0, put.stderr
    assert "created" in put.stderr, put.stderr
    experiment = json.loads(put.stdout)
    assert (experiment["key"], experiment["state"], experiment["control"]) == ("primer", "running", "dialog"), experiment
    assert last_audit(app)[:2] == ["experimentPut", "cli"]

    from_stdin = subprocess.run(
        [LOCGATE, "experiments", "put", "another", "--app", app, "--file", "-", "--database-name", DATABASE,
         "--log-level", "warning"], input=PRIMER, capture_output=True, text=True, timeout=60)
    assert from_stdin.returncode == 0, from_stdin.stderr
    replaced = locgate("experiments", "put", "primer", "--app", app, "--body", PRIMER)
    assert replaced.returncode == 0 and "replaced" in replaced.stderr, replaced.stderr

    refused = locgate("experiments", "put", "third", "--app", app, "--body",
                      json.dumps({**json.loads(PRIMER), "weights": [50, 50]}))
    assert refused.returncode != 0, refused.stdout
    assert "validationFailed" in refused.stderr and "weights" in refused.stderr, refused.stderr

    listed = locgate("experiments", "list", "--app", app)
    assert listed.returncode == 0, listed.stderr
    assert [item["key"] for item in json.loads(listed.stdout)["experiments"]] == ["another", "primer"]

    results = locgate("experiments", "results", "primer", "--app", app)
    assert results.returncode == 0, results.stderr
    body = json.loads(results.stdout)
    assert (body["experiment"], body["state"]) == ("primer", "running"), body
    assert [row["variant"] for row in body["variants"]] == ["dialog", "primer"], body
    assert all(row["exposed"] == 0 and row["grantRate"] is None for row in body["variants"]), body
    csv = locgate("experiments", "results", "primer", "--app", app, "--format", "csv")
    assert csv.returncode == 0, csv.stderr
    assert csv.stdout.splitlines() == [
        "variant,exposed,answered,granted,grantRate,ci95Low,ci95High,exposedGrantRate,ci95ExposedLow,ci95ExposedHigh,uplift,pValue",
        "dialog,0,0,0,,,,,,,,",
        "primer,0,0,0,,,,,,,,",
    ], csv.stdout

    stopped = locgate("experiments", "stop", "primer", "--app", app, "--winner", "primer")
    assert stopped.returncode == 0, stopped.stderr
    assert (json.loads(stopped.stdout)["winner"], json.loads(stopped.stdout)["stopReason"]) == ("primer", "operator")
    assert last_audit(app)[:2] == ["experimentStopped", "cli"]
    again = locgate("experiments", "stop", "primer", "--app", app)
    assert again.returncode != 0 and "experimentStopped" in again.stderr, again.stderr

    deleted = locgate("experiments", "delete", "primer", "--app", app)
    assert deleted.returncode == 0, deleted.stderr
    assert last_audit(app)[:2] == ["experimentDeleted", "cli"]
    missing = locgate("experiments", "results", "primer", "--app", app)
    assert missing.returncode != 0 and "notFound" in missing.stderr, missing.stderr
