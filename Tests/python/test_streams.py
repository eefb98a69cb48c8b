"""Push streams (SPEC §5) against two live locgate servers on one database.

Deploy/e2e starts both and passes their URLs, the first one's pid, and the admin token. Each
test makes an app of its own. Figures (delivery latency, memory per stream) are written to
.streams/results.json and printed by Deploy/e2e.
"""
import json
import os
import socket
import statistics
import threading
import time
import urllib.error
import urllib.request
import uuid

import pytest

URL = os.environ["LOCGATE_E2E_URL"]
URL2 = os.environ.get("LOCGATE_E2E_URL2", URL)
TOKEN = os.environ["LOCGATE_E2E_ADMIN_TOKEN"]
PID = int(os.environ.get("LOCGATE_E2E_PID", "0"))
DATABASE = os.environ.get("LOCGATE_E2E_DATABASE")
RESULTS = os.path.join(os.environ.get("LOCGATE_ROOT", "."), ".streams", "results.json")


def call(method, url, path, key, body=None, headers=None):
    request = urllib.request.Request(
        url + path, method=method, data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json", **(headers or {})})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, dict(response.headers), json.loads(response.read() or b"{}")


def new_app(name):
    _, _, body = call("POST", URL, "/v1/apps", TOKEN, {"name": name})
    return body["apiKey"]


def event(user, device, enabled):
    return {"id": str(uuid.uuid4()), "userId": user, "deviceId": device, "occurredAt": "2026-11-22T10:00:00Z",
            "type": "locationServicesChanged", "data": {"enabled": enabled}}


def record(name, value):
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    results = {}
    if os.path.exists(RESULTS):
        with open(RESULTS) as handle:
            results = json.load(handle)
    results[name] = value
    with open(RESULTS, "w") as handle:
        json.dump(results, handle, indent=2, sort_keys=True)


class SSE:
    """A raw Server-Sent Events reader on its own socket, with a reader thread."""

    def __init__(self, url, path, key, headers=None, receive_buffer=None):
        host, port = url.split("//")[1].split(":")
        self.socket = socket.socket()
        if receive_buffer:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        self.socket.connect((host, int(port)))
        lines = [f"GET {path} HTTP/1.1", f"Host: {host}:{port}", f"Authorization: Bearer {key}", "Accept: text/event-stream"]
        lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
        self.socket.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.file = self.socket.makefile("rb")
        self.status = int(self.file.readline().split()[1])
        while self.file.readline() not in (b"\r\n", b""):
            pass
        self.messages = []  # (id, data, time received)
        self.condition = threading.Condition()
        self.closed = False
        if self.status == 200:
            threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        message_id, data = None, None
        try:
            for raw in self.file:
                line = raw.decode().rstrip("\r\n")
                # The last chunk of a chunked body: the server ended the stream.
                if line == "0" and data is None and message_id is None:
                    break
                # Chunked transfer encoding: skip the chunk-size lines.
                if line and all(c in "0123456789abcdefABCDEF" for c in line) and data is None and message_id is None:
                    continue
                if line.startswith("id: "):
                    message_id = line[4:]
                elif line.startswith("data: "):
                    data = json.loads(line[6:])
                elif line == "" and data is not None:
                    with self.condition:
                        self.messages.append((message_id, data, time.monotonic()))
                        self.condition.notify_all()
                    message_id, data = None, None
        except (OSError, ValueError):
            pass
        with self.condition:
            self.closed = True
            self.condition.notify_all()

    def wait(self, count, timeout):
        deadline = time.monotonic() + timeout
        with self.condition:
            while len(self.messages) < count and not self.closed and time.monotonic() < deadline:
                self.condition.wait(deadline - time.monotonic())
            return len(self.messages) >= count

    def close(self):
        try:
            self.socket.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.socket.close()


def test_ofrep_event_stream_across_processes():
    key = new_app("ofrep-stream")
    call("PUT", URL, "/v1/features/nearby", key, {"requires": "whenInUse"})
    context = {"context": {"targetingKey": "u", "deviceId": "d"}}
    status, headers, bulk = call("POST", URL, "/ofrep/v1/evaluate/flags", key, context)
    stream = bulk["eventStreams"][0]
    assert stream["type"] == "sse" and stream["inactivityDelaySec"] > 0
    path = stream["url"].split(URL.split("//")[1], 1)[1]
    reader = SSE(URL, path, key)
    assert reader.status == 200
    assert reader.wait(1, 2), "a (re)connect gets refetchEvaluation at once"
    assert reader.messages[0][1] == {"type": "refetchEvaluation", "etag": headers["ETag"]}
    latencies, from_send = [], []
    for round_ in range(20):
        before = len(reader.messages)
        sent = time.monotonic()
        call("POST", URL2, "/v1/events", key, {"events": [event("u", "d", round_ % 2 == 1)]})
        acknowledged = time.monotonic()
        assert reader.wait(before + 1, 1.0), f"round {round_}: no refetchEvaluation within 1 s"
        # From the acknowledgement (the message may even arrive first: NOTIFY goes at commit).
        latencies.append(max(0.0, reader.messages[before][2] - acknowledged) * 1000)
        from_send.append((reader.messages[before][2] - sent) * 1000)
        etag = reader.messages[before][1]["etag"]
        # The refetch gives the new ETag; the old one is no longer current.
        try:
            call("POST", URL, "/ofrep/v1/evaluate/flags", key, context, {"If-None-Match": etag})
            assert False, "the streamed ETag should match (304)"
        except urllib.error.HTTPError as error:
            assert error.code == 304
    # A feature change reaches the stream too.
    before = len(reader.messages)
    call("PUT", URL2, "/v1/features/later", key, {"requires": "always"})
    assert reader.wait(before + 1, 1.0)
    reader.close()
    latencies.sort()
    from_send.sort()
    record("ofrepDeliveryMs", {"p50": statistics.median(latencies), "p99": latencies[int(len(latencies) * 0.99) - 1],
                               "max": latencies[-1], "samples": len(latencies),
                               "fromSendP50": statistics.median(from_send), "fromSendMax": from_send[-1]})


def test_ofrep_stream_closes_after_its_inactivity_delay():
    key = new_app("inactive")
    call("PUT", URL2, "/v1/features/nearby", key, {"requires": "whenInUse"})
    _, _, bulk = call("POST", URL2, "/ofrep/v1/evaluate/flags", key, {"context": {"targetingKey": "idle"}})
    delay = bulk["eventStreams"][0]["inactivityDelaySec"]
    assert delay == 3, "Deploy/e2e starts the second server with --stream-inactivity 3"
    reader = SSE(URL2, "/ofrep/v1/event-streams?targetingKey=idle", key)
    assert reader.wait(1, 2)
    opened = time.monotonic()
    with reader.condition:
        while not reader.closed and time.monotonic() - opened < delay + 3:
            reader.condition.wait(0.1)
    assert reader.closed and delay - 0.5 <= time.monotonic() - opened <= delay + 2, "closed after inactivityDelaySec"
    reader.close()


def test_streams_stay_correct_while_the_listen_connections_are_cut():
    if not DATABASE:
        pytest.skip("LOCGATE_E2E_DATABASE is not set")
    import subprocess
    key = new_app("cut-streams")
    call("PUT", URL, "/v1/features/nearby", key, {"requires": "whenInUse"})
    reader = SSE(URL, "/ofrep/v1/event-streams?targetingKey=cut&deviceId=d", key)
    feed = SSE(URL, "/v1/changes", key)
    assert reader.wait(1, 2)
    stop = threading.Event()

    def cutter():
        url = os.environ["LOCGATE_DATABASE_URL"].rsplit("/", 1)[0] + "/" + DATABASE
        while not stop.is_set():
            subprocess.run(["psql", "-X", "-q", url, "-c",
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'locgate-listen'"],
                           capture_output=True)
            stop.wait(0.3)

    thread = threading.Thread(target=cutter)
    thread.start()
    try:
        for round_ in range(15):
            before = len(reader.messages)
            # Alternating off and on: every append changes the evaluation (and so its ETag).
            call("POST", URL2, "/v1/events", key, {"events": [event("cut", "d", round_ % 2 == 1)]})
            assert reader.wait(before + 1, 1.5), f"round {round_}: no refetchEvaluation with the listeners cut"
            time.sleep(0.1)
        assert feed.wait(15, 3), "the change feed saw every event with the listeners cut"
        assert [data["version"] for _, data, _ in feed.messages] == list(range(1, 16))
    finally:
        stop.set()
        thread.join()
        reader.close()
        feed.close()


def read_feed(key, start_headers, expected, timeout=10):
    reader = SSE(URL, "/v1/changes" + ("" if start_headers else "?from=start"), key, headers=start_headers)
    assert reader.status == 200
    reader.wait(expected, timeout)
    time.sleep(0.2)  # nothing more may come
    reader.close()
    return [(message_id, data) for message_id, data, _ in reader.messages]


def test_changes_resume_exactly_once():
    key = new_app("changes")
    writers, per_writer = 4, 40
    total = writers * per_writer
    # A reader that reconnects every 15 messages while the writers run.
    resumed = []

    def resuming_reader():
        last = None
        deadline = time.monotonic() + 30
        while len(resumed) < total and time.monotonic() < deadline:
            headers = {"Last-Event-ID": last} if last else None
            reader = SSE(URL2, "/v1/changes" + ("" if last else "?from=start"), key, headers=headers)
            reader.wait(15, 2)
            reader.close()
            for message_id, data, _ in reader.messages[:15]:
                resumed.append((message_id, data))
                last = message_id

    def writer(number):
        for index in range(per_writer):
            url = URL if index % 2 == 0 else URL2
            call("POST", url, "/v1/events", key, {"events": [event(f"w{number}", f"d{index % 3}", index % 2 == 0)]})

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(writers)]
    follower = threading.Thread(target=resuming_reader)
    follower.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    follower.join()
    full = read_feed(key, None, total)
    assert len(full) == total
    assert len({message_id for message_id, _ in full}) == total
    assert len({(d["userId"], d["deviceId"], d["version"]) for _, d in full}) == total
    # Per stream, versions arrive in order 1..n.
    per_stream = {}
    for _, data in full:
        per_stream.setdefault((data["userId"], data["deviceId"]), []).append(data["version"])
    assert all(versions == list(range(1, len(versions) + 1)) for versions in per_stream.values())
    assert resumed == full, "resuming every 15 messages during the run saw every event once, in order"
    assert all(set(d) == {"userId", "deviceId", "version", "status", "accuracy"} for _, d in full)
    # Resumed from every position: exactly the rest.
    for index in range(0, total, 7):
        rest = read_feed(key, {"Last-Event-ID": full[index][0]}, total - index - 1, timeout=5)
        assert rest == full[index + 1:], f"resume after {full[index][0]}"
    bogus = SSE(URL, "/v1/changes", key, headers={"Last-Event-ID": "bogus"})
    assert bogus.status == 400
    bogus.close()


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_thousand_streams_bounded_memory():
    if PID == 0:
        pytest.skip("LOCGATE_E2E_PID is not set")
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(max(soft, 4096), hard), hard))
    key = new_app("thousand")
    call("PUT", URL, "/v1/features/nearby", key, {"requires": "whenInUse"})
    before = rss_kib(PID)
    readers = []
    try:
        for index in range(1000):
            readers.append(SSE(URL, f"/ofrep/v1/event-streams?targetingKey=u{index % 50}", key))
        assert all(reader.status == 200 for reader in readers)
        assert all(reader.wait(1, 10) for reader in readers)
        after = rss_kib(PID)
        refused = SSE(URL, "/ofrep/v1/event-streams?targetingKey=u", key)
        assert refused.status == 429, "the app's 1,001st stream is refused"
        refused.close()
        # An append reaches every stream of its user.
        call("POST", URL2, "/v1/events", key, {"events": [event("u7", "d", False)]})
        touched = [reader for index, reader in enumerate(readers) if index % 50 == 7]
        assert all(reader.wait(2, 2) for reader in touched)
    finally:
        for reader in readers:
            reader.close()
    per_stream = (after - before) * 1024 / 1000
    record("streams", {"open": 1000, "rssBeforeKiB": before, "rssAfterKiB": after, "bytesPerStream": per_stream})
    assert per_stream < 64 * 1024, f"{per_stream} bytes per open stream"
    # A stream notices its client left at its next write (a keepalive every 5 s at most).
    deadline = time.monotonic() + 20
    open_now = None
    while time.monotonic() < deadline:
        with urllib.request.urlopen(URL + "/metrics", timeout=5) as response:
            for line in response.read().decode().splitlines():
                if line.startswith("locgate_streams_open "):
                    open_now = float(line.split()[1])
        if open_now is not None and open_now < 50:
            break
        time.sleep(0.5)
    assert open_now is not None and open_now < 50, f"{open_now} streams still counted after their clients left"


def test_changes_carry_status_and_accuracy():
    key = new_app("changes-accuracy")
    call("POST", URL, "/v1/events", key, {"events": [
        {"id": str(uuid.uuid4()), "userId": "acc", "deviceId": "phone", "occurredAt": "2026-11-22T10:00:00Z",
         "type": "statusObserved", "data": {"status": "authorizedWhenInUse", "accuracy": "reduced"}},
        {"id": str(uuid.uuid4()), "userId": "acc", "deviceId": "phone", "occurredAt": "2026-11-22T10:00:01Z",
         "type": "settingsChanged", "data": {"preciseLocation": True}},
    ]})
    messages = [data for _, data in read_feed(key, None, 2)]
    assert [(m["version"], m["status"], m["accuracy"]) for m in messages] == [
        (1, "authorizedWhenInUse", "reduced"), (2, "authorizedWhenInUse", "full")], messages


def test_revoked_key_closes_its_streams_everywhere_within_a_second():
    """SPEC §5: a change feed or OFREP event stream that a key opened is closed within the second
    of its revocation, on the process that took the revocation and on the other, and sends
    nothing after. Events keep arriving throughout, so an open stream would keep flowing."""
    admin = new_app("revoked-streams")
    # A feature whose decision follows the events, so that each changes the OFREP bulk answer.
    call("PUT", URL, "/v1/features/nearby", admin, {"requires": "whenInUse", "services": ["standard"]})
    _, _, created = call("POST", URL, "/v1/keys", admin, {"scope": "read"})
    read_key, read_id = created["key"], created["id"]
    stop = threading.Event()

    def writer():
        index = 0
        while not stop.is_set() and index < 600:
            # One device whose Location Services flip each time: every event changes its decision.
            call("POST", URL, "/v1/events", admin, {"events": [event("u", "d", index % 2 == 0)]})
            index += 1
            time.sleep(0.05)

    streams = {
        "changes here": SSE(URL, "/v1/changes", read_key),
        "changes there": SSE(URL2, "/v1/changes", read_key),
        "ofrep here": SSE(URL, "/ofrep/v1/event-streams?targetingKey=u&deviceId=d", read_key),
        "ofrep there": SSE(URL2, "/ofrep/v1/event-streams?targetingKey=u&deviceId=d", read_key),
    }
    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert all(stream.status == 200 for stream in streams.values())
        for name, stream in streams.items():
            assert stream.wait(2, 10), f"{name} flows before the revocation"
        status, _, _ = call("DELETE", URL, f"/v1/keys/{read_id}", admin)
        assert status == 204
        revoked_at = time.monotonic()
        for name, stream in streams.items():
            deadline = revoked_at + 1.0
            with stream.condition:
                while not stream.closed and time.monotonic() < deadline:
                    stream.condition.wait(deadline - time.monotonic())
                assert stream.closed, f"{name} still open 1 s after its key was revoked"
                late = [received - revoked_at for _, _, received in stream.messages if received > revoked_at + 0.2]
            assert not late, f"{name} sent {len(late)} messages after the revocation"
        # The key itself is refused at once, on both processes.
        for url in (URL, URL2):
            refused = SSE(url, "/v1/changes", read_key)
            assert refused.status == 401
            refused.close()
    finally:
        stop.set()
        thread.join()
        for stream in streams.values():
            stream.close()
