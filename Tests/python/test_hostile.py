"""Hostile input against a live server (Deploy/e2e; with `Deploy/test --release-e2e`, against the
release build): every value that reaches a formatter or an arithmetic conversion (times,
versions, counts, sizes) out of range. Each must be answered 4xx with the JSON error body
(a code and a message), and the server must still be up afterwards: a trap in one request
would end the process for every other request.
"""
import json
import os
import urllib.error
import urllib.request
import uuid

import pytest

URL = os.environ["LOCGATE_E2E_URL"]
TOKEN = os.environ["LOCGATE_E2E_ADMIN_TOKEN"]
PID = int(os.environ.get("LOCGATE_E2E_PID", "0"))


def call(method, path, key, body=None, raw=None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    request = urllib.request.Request(URL + path, method=method, data=data,
                                     headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


@pytest.fixture(scope="module")
def key():
    status, body = call("POST", "/v1/apps", TOKEN, {"name": "hostile"})
    assert status == 201, body
    return json.loads(body)["apiKey"]


def alive():
    if PID:
        os.kill(PID, 0)  # raises if the process is gone
    with urllib.request.urlopen(URL + "/healthz", timeout=10) as response:
        assert response.status == 200


def refused(status, body, allowed=(400, 404, 413, 422)):
    assert status in allowed, (status, body[:300])
    error = json.loads(body)["error"]
    assert error["code"] and error["message"], body


def event(**overrides):
    base = {"id": str(uuid.uuid4()), "userId": "u", "deviceId": "d", "occurredAt": "2026-11-20T10:00:00Z",
            "type": "appStateChanged", "data": {"state": "foreground"}}
    base.update(overrides)
    return base


TIMES = ["0000-01-01T00:00:00Z", "-0001-01-01T00:00:00Z", "12026-01-01T00:00:00Z", "1500-06-01T00:00:00Z",
         "1969-12-31T23:59:59Z", "10000-01-01T00:00:00Z", "2026-02-30T00:00:00Z", "2025-02-29T00:00:00Z",
         "2026-11-20T25:00:00Z", "2026-11-20T10:00:60Z", "2026-11-20T10:00:00+99:99",
         "2026-11-20T10:00:00.99999999999999999999Z", "99999999999999999999-01-01T00:00:00Z"]


@pytest.mark.parametrize("time", TIMES)
def test_occurred_at_out_of_range(key, time):
    status, body = call("POST", "/v1/events", key, {"events": [event(occurredAt=time)]})
    refused(status, body)
    alive()


@pytest.mark.parametrize("version", [-1, 2 ** 63, 2 ** 64 + 1, 1e300, "1", True, 10 ** 40])
def test_expected_version_out_of_range(key, version):
    raw = json.dumps({"events": [event(expectedVersion=0)]}).replace('"expectedVersion": 0', f'"expectedVersion": {json.dumps(version)}')
    status, body = call("POST", "/v1/events", key, raw=raw.encode())
    refused(status, body, allowed=(400, 409, 422))
    alive()


@pytest.mark.parametrize("query", ["from=0000-01-01", "to=12026-01-01", "from=-0001-01-01", "from=1500-01-01",
                                   "from=2026-13-01", "to=99999999999999999999-01-01"])
def test_analytics_bounds(key, query):
    status, body = call("GET", f"/v1/analytics/prompts?{query}", key)
    refused(status, body)
    alive()


@pytest.mark.parametrize("query", ["asOf=0000-01-01T00:00:00Z", "asOf=12026-01-01T00:00:00Z", "version=-1",
                                   "version=9223372036854775808", "version=99999999999999999999", "version=1e9",
                                   "asOf=2026-11-20T10:00:00Z&version=1"])
def test_state_as_of_bounds(key, query):
    status, body = call("GET", f"/v1/users/u/devices/d/state?{query}", key)
    refused(status, body)
    alive()


@pytest.mark.parametrize("query", ["afterVersion=-1", "afterVersion=9223372036854775808", "limit=0", "limit=-5",
                                   "limit=99999999999999999999"])
def test_history_paging_bounds(key, query):
    status, body = call("GET", f"/v1/users/u/devices/d/history?{query}", key)
    if status != 200:
        refused(status, body)
    alive()


def test_gate_query_sizes(key):
    status, body = call("POST", "/v1/gates/query", key,
                        {"devices": [{"userId": "u", "deviceId": "d"}], "features": ["f"] * 101})
    refused(status, body)
    status, body = call("POST", "/v1/gates/query", key,
                        {"devices": [{"userId": "u", "deviceId": f"d{i}"} for i in range(10001)]})
    refused(status, body)
    alive()


# SPEC §14 "Strict input": what a client could slip past a lenient reader.

@pytest.mark.parametrize("method,path", [
    ("GET", "/v1/users/u/devices/d/gates?feature=a&feature=b"), ("POST", "/v1/events?x=1&x=2"),
    ("GET", "/v1/analytics/prompts?from=2026-01-01&%66rom=2026-01-02"), ("GET", "/healthz?x&x"),
    ("GET", "/metrics?x=1&x=1"), ("GET", "/nowhere?x=1&x=1"), ("GET", "/dashboard?from=a&from=b"),
    ("GET", "/dashboard/signin?x=1&x=2"),
])
def test_query_parameter_twice_anywhere(key, method, path):
    for bearer in (key, "not-a-key"):
        status, body = call(method, path, bearer)
        assert status == 400, (path, status, body[:300])
        error = json.loads(body)["error"]
        assert error["code"] == "invalidRequest" and "given twice" in error["message"], body
    alive()


def test_query_parameter_twice_under_ofrep(key):
    for method, path in [("POST", "/ofrep/v1/evaluate/flags/f?x=1&x=1"),
                         ("GET", "/ofrep/v1/event-streams?targetingKey=u&targetingKey=v")]:
        status, body = call(method, path, key, raw=b"{}" if method == "POST" else None)
        assert status == 400, (path, status, body[:300])
        assert json.loads(body)["errorCode"] == "INVALID_CONTEXT", body
    alive()


def test_unknown_event_member_and_repeated_names(key):
    misspelt = json.dumps({"events": [event(), event(expectedVerison=3)]})
    status, body = call("POST", "/v1/events", key, raw=misspelt.encode())
    assert status == 422 and json.loads(body)["error"]["index"] == 1, body
    assert json.loads(body)["error"]["message"].startswith("expectedVerison:"), body
    twice = json.dumps({"events": [event()]}).replace('"data": {"state": "foreground"}',
                                                        '"data": {"state": "foreground", "state": "background"}')
    status, body = call("POST", "/v1/events", key, raw=twice.encode())
    assert status == 400 and json.loads(body)["error"]["message"].startswith("data.state: given twice"), body
    status, body = call("PUT", "/v1/features/twice", key, raw=b'{"requires": "always", "requires": "whenInUse"}')
    assert status == 400 and json.loads(body)["error"]["code"] == "invalidRequest", body
    alive()


@pytest.mark.parametrize("version", ["1.5", "1e40", "-0.5", "null"])
def test_expected_version_not_an_integer(key, version):
    raw = json.dumps({"events": [event(expectedVersion=0)]}).replace('"expectedVersion": 0', f'"expectedVersion": {version}')
    status, body = call("POST", "/v1/events", key, raw=raw.encode())
    assert status == 422, (version, status, body[:300])
    error = json.loads(body)["error"]
    assert error["message"].startswith("expectedVersion:") and error["index"] == 0, body
    alive()


def test_null_where_a_value_is_due(key):
    status, body = call("PUT", "/v1/features/nulled", key, {"requires": "whenInUse", "disabled": None})
    assert status == 422 and json.loads(body)["error"]["message"].startswith("disabled:"), body
    status, _ = call("GET", "/v1/features/nulled", key)
    assert status == 404
    status, body = call("PUT", "/v1/features/nulled", key, {"requires": "whenInUse", "minAppVersion": None})
    assert status == 201, body
    alive()


def test_analytics_from_after_to(key):
    status, body = call("GET", "/v1/analytics/prompts?from=2026-02-01&to=2026-01-01", key)
    assert status == 422 and json.loads(body)["error"]["message"].startswith("from:"), body
    alive()
