"""Prompt experiments (SPEC §16) against two live locgate servers on one database.

Deploy/e2e starts both (LOCGATE_E2E_URL and LOCGATE_E2E_URL2; the second's push streams end
after 3 s without a message, so the streams here are read on the first) and passes the admin
token. Each test makes an app of its own. What must happen "within 1 s" is waited for with a
deadline, never slept for: a read sent 1 s or more after the change was acknowledged that still
misses it fails the test; a slow answer does not.
"""
import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request
import uuid

URL = os.environ["LOCGATE_E2E_URL"]
URL2 = os.environ.get("LOCGATE_E2E_URL2", URL)
TOKEN = os.environ["LOCGATE_E2E_ADMIN_TOKEN"]
BOUND = 1.0  # SPEC §16: every experiment change reaches every server and push stream within 1 s.
CSV_HEADER = ("variant,exposed,answered,granted,grantRate,ci95Low,ci95High,exposedGrantRate,"
              "ci95ExposedLow,ci95ExposedHigh,uplift,pValue")
# Every new device to `primer`, so that no assertion depends on a bucket.
EVERYONE_PRIMER = {"prompt": "whenInUse", "control": "dialog",
                   "variants": [{"key": "dialog", "weight": 0}, {"key": "primer", "weight": 100}]}


def call(method, url, path, key, body=None, headers=None):
    """(status, headers, body): the body parsed as JSON where it is JSON, else its text."""
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    request = urllib.request.Request(
        url + path, method=method, data=data,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status, answer_headers, raw = response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        status, answer_headers, raw = error.code, dict(error.headers), error.read()
    try:
        return status, answer_headers, json.loads(raw or b"{}")
    except ValueError:
        return status, answer_headers, raw.decode()


def new_app(name):
    status, _, body = call("POST", URL, "/v1/apps", TOKEN, {"name": name})
    assert status == 201, body
    return body["apiKey"]


def context_event(user, device, install_id=None):
    data = {"platform": "iOS", "osVersion": "17.4", "appVersion": "5.2"}
    if install_id:
        data["installId"] = install_id
    return {"id": str(uuid.uuid4()), "userId": user, "deviceId": device, "occurredAt": "2026-11-22T10:00:00Z",
            "type": "contextReported", "data": data}


def append(key, events, url=URL):
    status, _, body = call("POST", url, "/v1/events", key, {"events": events})
    assert status == 200, body
    return body


def bulk(url, key, user="u", device="d"):
    context = {"targetingKey": user}
    if device:
        context["deviceId"] = device
    status, headers, body = call("POST", url, "/ofrep/v1/evaluate/flags", key, {"context": context})
    assert status == 200, body
    return headers.get("ETag"), {flag["key"]: flag for flag in body["flags"]}


def converge(read, bound=BOUND, give_up=10.0):
    """Polls `read` (true once the change shows) from now (just after the acknowledgement) until it
    shows or `give_up` passes. Returns (seen after, last stale read sent after), in seconds: the
    change holds when it was seen and no read sent `bound` or more after missed it."""
    acknowledged = time.monotonic()
    last_stale = None
    while True:
        sent = time.monotonic()
        if read():
            return time.monotonic() - acknowledged, last_stale
        last_stale = sent - acknowledged
        if time.monotonic() - acknowledged >= give_up:
            return None, last_stale
        time.sleep(0.002)


def holds(result, bound=BOUND):
    seen, last_stale = result
    return seen is not None and (last_stale is None or last_stale < bound)


class SSE:
    """A raw Server-Sent Events reader on its own socket, with a reader thread (as test_streams.py's)."""

    def __init__(self, url, path, key):
        host, port = url.split("//")[1].split(":")
        self.socket = socket.create_connection((host, int(port)))
        lines = [f"GET {path} HTTP/1.1", f"Host: {host}:{port}", f"Authorization: Bearer {key}", "Accept: text/event-stream"]
        self.socket.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.file = self.socket.makefile("rb")
        self.status = int(self.file.readline().split()[1])
        while self.file.readline() not in (b"\r\n", b""):
            pass
        self.messages = []  # (data, time received)
        self.condition = threading.Condition()
        self.closed = False
        if self.status == 200:
            threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            for raw in self.file:
                line = raw.decode().rstrip("\r\n")
                if line.startswith("data: "):
                    with self.condition:
                        self.messages.append((json.loads(line[6:]), time.monotonic()))
                        self.condition.notify_all()
        except (OSError, ValueError):
            pass
        with self.condition:
            self.closed = True
            self.condition.notify_all()

    def wait(self, count, timeout):
        deadline = time.monotonic() + timeout
        with self.condition:
            while len(self.messages) < count and not self.closed and time.monotonic() < deadline:
                self.condition.wait(max(0.0, deadline - time.monotonic()))
            return len(self.messages) >= count

    def close(self):
        try:
            self.socket.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.socket.close()


def test_every_change_reaches_the_other_server_and_its_streams_within_a_second():
    key = new_app("experiments across servers")
    status, _, body = call("PUT", URL2, "/v1/experiments/primer", key, EVERYONE_PRIMER)
    assert status == 201, body
    append(key, [context_event("u", "d")], url=URL2)
    # The first server exposes the device (and caches the app's experiments).
    etag, flags = bulk(URL, key)
    assert (flags["primer"]["value"], flags["primer"]["variant"], flags["primer"]["reason"]) == ("primer", "primer", "SPLIT"), flags
    reader = SSE(URL, "/ofrep/v1/event-streams?targetingKey=u&deviceId=d", key)
    try:
        assert reader.status == 200
        assert reader.wait(1, 5), "a (re)connect gets refetchEvaluation at once"
        assert reader.messages[0][0] == {"type": "refetchEvaluation", "etag": etag}

        def change(what, method, path, body, expected_status, shows, streamed=True):
            before = len(reader.messages)
            status, _, answer = call(method, URL2, path, key, body)
            assert status == expected_status, f"{what}: {status} {answer}"
            acknowledged = time.monotonic()
            seen = converge(lambda: shows(bulk(URL, key)[1]))
            assert holds(seen), f"{what}: the other server's bulk evaluation (seen, last stale read) = {seen}"
            if streamed:
                left = BOUND - (time.monotonic() - acknowledged)
                assert reader.wait(before + 1, max(0.0, left)), f"{what}: no refetchEvaluation within 1 s"
                message = reader.messages[before][0]
                assert message["type"] == "refetchEvaluation"
                assert message["etag"] == bulk(URL, key)[0], f"{what}: the stream's ETag is the bulk answer's"

        change("stop", "POST", "/v1/experiments/primer/stop", {"winner": "dialog"}, 200,
               lambda flags: flags.get("primer", {}).get("value") == "dialog" and flags["primer"]["reason"] == "STATIC")
        stopped_etag, _ = bulk(URL, key)
        assert stopped_etag != etag, "a stop changes the bulk answer's ETag"
        change("new experiment", "PUT", "/v1/experiments/another", EVERYONE_PRIMER, 201,
               lambda flags: flags.get("another", {}).get("reason") == "SPLIT")
        change("delete", "DELETE", "/v1/experiments/primer", None, 204,
               lambda flags: "primer" not in flags and "another" in flags)
        status, _, missing = call("POST", URL, "/ofrep/v1/evaluate/flags/primer", key,
                                  {"context": {"targetingKey": "u", "deviceId": "d"}})
        assert status == 404 and missing["errorCode"] == "FLAG_NOT_FOUND", missing

        # A PUT of new weights: the exposed device keeps its variant (sticky), a new device on the
        # other server gets the new weights within the bound.
        reweighted = {**EVERYONE_PRIMER, "variants": [{"key": "dialog", "weight": 100}, {"key": "primer", "weight": 0}]}
        status, _, body = call("PUT", URL2, "/v1/experiments/another", key, reweighted)
        assert status == 200, body

        def newcomer_gets_dialog():
            status, _, flag = call("POST", URL, "/ofrep/v1/evaluate/flags/another", key,
                                   {"context": {"targetingKey": f"new-{uuid.uuid4()}", "deviceId": "d"}})
            return status == 200 and flag["value"] == "dialog" and flag["reason"] == "SPLIT"
        seen = converge(newcomer_gets_dialog)
        assert holds(seen), f"weights: {seen}"
        assert bulk(URL, key)[1]["another"]["value"] == "primer", "sticky across a PUT of the weights"
    finally:
        reader.close()


def test_a_stop_on_one_server_is_the_other_servers_bulk_answer_and_etag_within_a_second():
    key = new_app("experiment stop across servers")
    assert call("PUT", URL, "/v1/experiments/primer", key, EVERYONE_PRIMER)[0] == 201
    append(key, [context_event("u", "d")])
    etag, flags = bulk(URL2, key)
    assert flags["primer"]["reason"] == "SPLIT", flags
    # Unchanged: 304 to If-None-Match.
    status, _, _ = call("POST", URL2, "/ofrep/v1/evaluate/flags", key, {"context": {"targetingKey": "u", "deviceId": "d"}},
                        headers={"If-None-Match": etag})
    assert status == 304
    status, _, stopped = call("POST", URL, "/v1/experiments/primer/stop", key, {})
    assert status == 200 and stopped["winner"] == "dialog" and stopped["stopReason"] == "operator", stopped

    def stopped_there():
        status, headers, body = call("POST", URL2, "/ofrep/v1/evaluate/flags", key,
                                     {"context": {"targetingKey": "u", "deviceId": "d"}}, headers={"If-None-Match": etag})
        if status != 200:
            return False
        flag = {flag["key"]: flag for flag in body["flags"]}["primer"]
        return flag["value"] == "dialog" and flag["reason"] == "STATIC" and headers.get("ETag") not in (None, etag)
    seen = converge(stopped_there)
    assert holds(seen), f"(seen, last stale read) = {seen}"
    # Without a device: the winner, STATIC, on both servers.
    for url in (URL, URL2):
        status, _, flag = call("POST", url, "/ofrep/v1/evaluate/flags/primer", key, {"context": {"targetingKey": "u"}})
        assert status == 200 and (flag["value"], flag["reason"]) == ("dialog", "STATIC"), flag


def test_ofrep_reasons_and_no_exposure_without_a_device():
    key = new_app("experiment OFREP")
    assert call("PUT", URL, "/v1/experiments/primer", key, EVERYONE_PRIMER)[0] == 201
    android_only = {"prompt": "foreground", "eligible": {"platforms": ["android"]},
                    "variants": [{"key": "dialog", "weight": 50}, {"key": "button", "weight": 50}]}
    assert call("PUT", URL, "/v1/experiments/android-only", key, android_only)[0] == 201
    append(key, [context_event("u", "d")])
    # Without a device: the control, DEFAULT, a string; nothing exposed.
    status, _, flag = call("POST", URL2, "/ofrep/v1/evaluate/flags/primer", key, {"context": {"targetingKey": "u"}})
    assert status == 200 and (flag["value"], flag["variant"], flag["reason"]) == ("dialog", "dialog", "DEFAULT"), flag
    _, flags = bulk(URL2, key, device=None)
    assert set(flags) == {"primer", "android-only"}, flags
    status, _, results = call("GET", URL, "/v1/experiments/primer/results", key)
    assert status == 200 and [row["exposed"] for row in results["variants"]] == [0, 0], results
    # With a device: SPLIT (exposed), DEFAULT where not eligible (not exposed).
    status, _, flag = call("POST", URL2, "/ofrep/v1/evaluate/flags/primer", key, {"context": {"targetingKey": "u", "deviceId": "d"}})
    assert (flag["value"], flag["variant"], flag["reason"]) == ("primer", "primer", "SPLIT"), flag
    status, _, flag = call("POST", URL2, "/ofrep/v1/evaluate/flags/android-only", key, {"context": {"targetingKey": "u", "deviceId": "d"}})
    assert (flag["value"], flag["reason"]) == ("dialog", "DEFAULT"), flag
    status, _, evaluation = call("GET", URL, "/v1/users/u/devices/d/experiments/primer", key)
    assert status == 200 and (evaluation["variant"], evaluation["reason"]) == ("primer", "assigned") and evaluation["exposedAt"], evaluation
    status, _, results = call("GET", URL, "/v1/experiments/primer/results", key)
    assert [row["variant"] for row in results["variants"]] == ["dialog", "primer"], results
    assert [row["exposed"] for row in results["variants"]] == [0, 1], results
    status, _, results = call("GET", URL, "/v1/experiments/android-only/results", key)
    assert sum(row["exposed"] for row in results["variants"]) == 0, results
    # The CSV: §16's columns, exactly, the control first.
    status, headers, csv = call("GET", URL, "/v1/experiments/primer/results", key, headers={"Accept": "text/csv"})
    assert status == 200 and headers["Content-Type"].startswith("text/csv"), headers
    lines = csv.splitlines()
    assert lines[0] == CSV_HEADER, lines
    assert lines[1].startswith("dialog,0,0,0,") and lines[2].startswith("primer,1,0,0,"), lines
    # An experiment's key in a gate request is no feature: 404.
    status, _, body = call("GET", URL2, "/v1/users/u/devices/d/gates/primer", key)
    assert status == 404 and body["error"]["code"] == "notFound", body


def test_a_reinstall_is_a_new_unit_exposed_at_its_next_evaluation():
    key = new_app("experiment reinstall")
    assert call("PUT", URL, "/v1/experiments/primer", key, EVERYONE_PRIMER)[0] == 201
    append(key, [context_event("u", "d", install_id="install-a")])
    status, _, first = call("GET", URL, "/v1/users/u/devices/d/experiments/primer", key)
    assert status == 200 and first["reason"] == "assigned" and first["exposedAt"], first
    append(key, [context_event("u", "d", install_id="install-b")], url=URL2)
    # The reinstall was appended through the other server: this one's next evaluation sees it.
    seen = converge(lambda: call("GET", URL, "/v1/users/u/devices/d/experiments/primer", key)[2]["exposedAt"] != first["exposedAt"])
    assert holds(seen), f"(seen, last stale read) = {seen}"
    status, _, results = call("GET", URL2, "/v1/experiments/primer/results", key)
    assert [row["exposed"] for row in results["variants"]] == [0, 2], results
