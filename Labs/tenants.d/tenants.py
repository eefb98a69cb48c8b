"""Whether one tenant can hurt another: what Labs/tenants runs after it started a durable
PostgreSQL cluster. Two apps, A (the heavy one) and B (the bystander), on one real
`locgate serve` (release build) per phase. Standard library only. Every request goes to
127.0.0.1; every loop is bounded in count and time; every wait has a deadline.

Phases (SPEC §5 "Resources", §13 "Erasure"):
  erase-large           A's one person of N events (1,000,000; --short 50,000), appended through
                        POST /v1/events in 1,000-event batches, is erased (DELETE /v1/users/{u})
                        while the server's resident memory is sampled every 100 ms: seconds to
                        done, RSS before and at its peak. Bound: growth under 64 MB; nothing of
                        the person left in the database afterwards.
  erasure-flood         A floods DELETE /v1/users/{u} for distinct unknown users (15 s; --short
                        5 s; 429 expected beyond 10,000 pending); meanwhile B appends small
                        persons and erases them one after another. Bound: each of B's erasures
                        done within 10 s of its 202. Then A's backlog must drain.
  erasure-beside-large  A erases a person of 200,000 events (--short 20,000); while it runs, B's
                        small erasures. Bound: each of B's done within 10 s of its 202.
  stream-churn          a server with --pool-size 8 and a per-app stream quota; A (20,000 events
                        in its log) opens and closes change feeds (?from=start, read a little,
                        close) and OFREP event streams (held a while) from more threads than its
                        quota; meanwhile B reads gates (cached and cache-missing), appends single
                        events and reads history. Bound: B gets no 5xx (no 503) and no failed
                        connection; every B answer is a 200.
"""
import argparse
import datetime
import http.client
import json
import multiprocessing
import os
import random
import subprocess
import sys
import threading
import time
import traceback
import urllib.parse
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Deploy", "pylib"))
from loadclient import percentile, request  # noqa: E402

PHASES = ["erase-large", "erasure-flood", "erasure-beside-large", "stream-churn"]
SMALL_ERASURE_BOUND_SECONDS = 10.0  # SPEC §13: a small erasure of one app done within 10 s
RSS_GROWTH_BOUND_MB = 64            # SPEC §13: "no more than a few tens of MB"
BATCH = 1000                        # events per append (the API's largest batch)
CONTEXT = {"platform": "iOS", "osVersion": "17.4", "appVersion": "3.2.0",
           "usageDescriptions": ["NSLocationWhenInUseUsageDescription", "NSLocationAlwaysAndWhenInUseUsageDescription"]}


class LabError(Exception):
    """A step of the lab itself could not be done (not a bound broken): the lab stops."""


def log(text):
    print(f"  {text}", flush=True)


def iso(epoch):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def seconds_between(start, end):
    """Seconds from one RFC 3339 time of an answer to another."""
    def parse(text):
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return round((parse(end) - parse(start)).total_seconds(), 3)


def outcome_of(status, body):
    """`HTTP 200`, `HTTP 503 overloaded`, `HTTP 429 GENERAL` (OFREP bodies): status and code."""
    code = None
    if isinstance(body, dict):
        error = body.get("error")
        code = error.get("code") if isinstance(error, dict) else body.get("errorCode")
    return f"HTTP {status} {code or ''}".strip()


def count(table, key, amount=1):
    table[key] = table.get(key, 0) + amount


class Client:
    """One keep-alive connection to the server on 127.0.0.1. A request that fails on a reused
    connection before any answer came (the server closed it while idle) is sent once more on a
    new one; every other failure is raised."""

    def __init__(self, port, timeout=10):
        self.port, self.timeout = port, timeout
        self.connection = None

    def close(self):
        if self.connection is not None:
            self.connection.close()
            self.connection = None

    def call(self, method, path, key=None, body=None, headers=None):
        """(status, parsed JSON body or {})."""
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body, separators=(",", ":")).encode())
        sent = {"Content-Type": "application/json"}
        if key:
            sent["Authorization"] = f"Bearer {key}"
        sent.update(headers or {})
        for attempt in range(2):
            reused = self.connection is not None
            if self.connection is None:
                self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            try:
                self.connection.request(method, path, body=data, headers=sent)
                response = self.connection.getresponse()
                text = response.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.close()
                if reused and attempt == 0:
                    continue
                raise
            except (OSError, http.client.HTTPException):
                self.close()
                raise
            if response.will_close:
                self.close()
            try:
                parsed = json.loads(text) if text else {}
            except ValueError:
                parsed = {}
            return response.status, parsed
        raise LabError("unreachable")

    def outcome(self, method, path, key=None, body=None):
        """(outcome text, status, body, milliseconds); a failed connection is `connection X`, status 0."""
        started = time.monotonic()
        try:
            status, answer = self.call(method, path, key, body)
            text = outcome_of(status, answer)
        except (OSError, http.client.HTTPException) as error:
            status, answer, text = 0, {}, f"connection {type(error).__name__}"
        return text, status, answer, (time.monotonic() - started) * 1000


# MARK: - Processes and the database

class Servers:
    """`locgate serve` processes, by port; each phase starts its own."""

    def __init__(self, binary, database_url, token, workdir):
        self.binary, self.database_url, self.token, self.workdir = binary, database_url, token, workdir
        self.processes = {}

    def log_path(self, port):
        return os.path.join(self.workdir, f"server-{port}.log")

    def tail(self, port, lines=30):
        try:
            with open(self.log_path(port), "rb") as handle:
                return b"".join(handle.readlines()[-lines:]).decode(errors="replace")
        except OSError:
            return "(no log)"

    def start(self, port, *extra):
        output = open(self.log_path(port), "ab")
        env = dict(os.environ, LOCGATE_DATABASE_URL=self.database_url, LOCGATE_ADMIN_TOKEN=self.token)
        command = [self.binary, "serve", "--port", str(port), "--log-level", "warning", *extra]
        process = subprocess.Popen(command, env=env, stdout=output, stderr=output)
        output.close()
        self.processes[port] = process
        deadline = time.monotonic() + 60
        for _ in range(1200):
            if process.poll() is not None:
                raise LabError(f"`{' '.join(command[1:])}` exited ({process.returncode}) while starting; "
                               f"its log:\n{self.tail(port)}")
            try:
                if request("GET", port, "/readyz", timeout=2)[0] == 200:
                    return process
            except (OSError, http.client.HTTPException):
                pass
            if time.monotonic() > deadline:
                break
            time.sleep(0.1)
        raise LabError(f"the server on {port} was not ready within 60 s; its log:\n{self.tail(port)}")

    def stop(self, port):
        process = self.processes.pop(port, None)
        if process and process.poll() is None:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)

    def stop_all(self):
        for port in list(self.processes):
            self.stop(port)


def psql(args, sql):
    command = ["psql", "-X", "-At", "-h", "127.0.0.1", "-p", str(args.pg_port), "-U", "postgres", "-d", "locgate", "-c", sql]
    return subprocess.run(command, check=True, capture_output=True, text=True, timeout=120).stdout.strip()


def wait_single_server(args, seconds=15):
    """An erasure is done once every server seen in the last 3 s acknowledged it: wait until the
    previous phase's server no longer counts, so that only this phase's server does."""
    deadline = time.monotonic() + seconds
    live = None
    for _ in range(seconds * 5 + 5):
        live = int(psql(args, "SELECT count(*) FROM server_processes WHERE seen_at > now() - interval '3 seconds'") or 0)
        if live == 1:
            return
        if time.monotonic() > deadline:
            break
        time.sleep(0.2)
    raise LabError(f"{live} live servers in server_processes after {seconds} s; this lab runs one")


def pending_erasures(args, app_id):
    return int(psql(args, f"SELECT count(*) FROM erasures WHERE app_id = '{app_id}' AND status = 'pending'") or 0)


def person_rows(args, app_id, user):
    """Rows of one person left in the tables that hold user ids."""
    where = f"app_id = '{app_id}' AND user_id = '{user}'"
    row = psql(args, f"SELECT (SELECT count(*) FROM events WHERE {where}), (SELECT count(*) FROM streams WHERE {where}), "
                     f"(SELECT count(*) FROM device_states WHERE {where}), (SELECT count(*) FROM stream_snapshots WHERE {where})")
    events, streams, states, snapshots = (int(value) for value in row.split("|"))
    return {"events": events, "streams": streams, "deviceStates": states, "streamSnapshots": snapshots}


# MARK: - Apps, events, erasures

def create_app(port, token, name):
    """The app, its admin key (from POST /v1/apps), an ingest and a read key, and one feature."""
    status, app = request("POST", port, "/v1/apps", token, {"name": name})
    if status != 201 or "apiKey" not in app:
        raise LabError(f"POST /v1/apps answered {status} {app}")
    keys = {"appId": app["appId"], "admin": app["apiKey"]}
    for scope in ("ingest", "read"):
        status, answer = request("POST", port, "/v1/keys", keys["admin"], {"scope": scope})
        if status != 201 or "key" not in answer:
            raise LabError(f"POST /v1/keys {scope} answered {status} {answer}")
        keys[scope] = answer["key"]
    status, answer = request("PUT", port, "/v1/features/nearby", keys["admin"], {"requires": "whenInUse"})
    if status not in (200, 201):
        raise LabError(f"PUT /v1/features/nearby answered {status} {answer}")
    return keys


def device_batches(user, device, events, start):
    """Batches of up to 1,000 events of one device, versions 1..events: a contextReported (an iOS
    device), then statusObserved alternating authorizedWhenInUse / denied (rule O1: reconciled
    each time, never rejected); occurredAt one second apart from `start`."""
    for first in range(0, events, BATCH):
        batch = []
        for index in range(first, min(events, first + BATCH)):
            if index == 0:
                kind, data = "contextReported", CONTEXT
            else:
                kind, data = "statusObserved", {"status": "authorizedWhenInUse" if index % 2 else "denied"}
            batch.append({"id": str(uuid.uuid4()), "userId": user, "deviceId": device, "occurredAt": iso(start + index),
                          "type": kind, "data": data})
        yield batch


def load(port, key, streams, threads, seconds, label):
    """Appends every stream of `streams` ((user, device, events)) through POST /v1/events, each
    stream's batches in order on one client thread; a batch answered 503 or not at all is sent
    again (same ids: a stored one answers duplicate) until `seconds` have passed. Any other
    answer stops the lab. Returns the figures."""
    total = sum(events for _, _, events in streams)
    deadline = time.monotonic() + seconds
    lock = threading.Lock()
    state = {"next": 0, "appended": 0, "duplicates": 0, "retried": {}, "failure": None, "reported": 0}
    started = time.monotonic()

    def send(client, batch):
        body = json.dumps({"events": batch}, separators=(",", ":")).encode()
        for _ in range(1000):
            text, status, answer, _ = client.outcome("POST", "/v1/events", key, body)
            if status == 200:
                results = answer.get("results", [])
                if len(results) != len(batch):
                    raise LabError(f"{label}: {len(results)} results for a batch of {len(batch)}")
                return sum(1 for result in results if result.get("duplicate"))
            if status not in (0, 503):
                raise LabError(f"{label}: POST /v1/events answered {text}: {json.dumps(answer)[:300]}")
            with lock:
                count(state["retried"], text)
            if time.monotonic() > deadline:
                raise LabError(f"{label}: a batch was not stored within {seconds} s (last answer {text})")
            time.sleep(0.2)
        raise LabError(f"{label}: a batch was refused 1,000 times")

    def worker():
        client = Client(port, timeout=60)
        try:
            while True:
                with lock:
                    if state["failure"] or state["next"] >= len(streams):
                        return
                    user, device, events = streams[state["next"]]
                    state["next"] += 1
                start = int(time.time()) - events - 86400
                for batch in device_batches(user, device, events, start):
                    if state["failure"]:
                        return
                    duplicates = send(client, batch)
                    with lock:
                        state["appended"] += len(batch)
                        state["duplicates"] += duplicates
                        if total >= 100_000 and state["appended"] - state["reported"] >= total // 10:
                            state["reported"] = state["appended"]
                            rate = state["appended"] / max(time.monotonic() - started, 0.001)
                            log(f"{label}: {state['appended']:,} of {total:,} events appended ({rate:,.0f}/s)")
        except Exception as error:  # noqa: BLE001 (handed to the main thread)
            with lock:
                state["failure"] = state["failure"] or error
        finally:
            client.close()

    workers = [threading.Thread(target=worker) for _ in range(max(1, min(threads, len(streams))))]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    if state["failure"]:
        raise state["failure"] if isinstance(state["failure"], LabError) else LabError(f"{label}: {state['failure']!r}")
    elapsed = time.monotonic() - started
    return {"events": total, "streams": len(streams), "seconds": round(elapsed, 1),
            "eventsPerSecond": round(total / max(elapsed, 0.001)), "duplicatesOnRetry": state["duplicates"],
            "retriedAnswers": state["retried"]}


def erase(client, key, user, seconds=30):
    """DELETE /v1/users/{u} until a 202 (a 503 or no answer is asked again): (when the 202 came,
    the erasure's id, every answer by outcome)."""
    answers = {}
    deadline = time.monotonic() + seconds
    for _ in range(10_000):
        text, status, answer, _ = client.outcome("DELETE", f"/v1/users/{user}", key)
        count(answers, text)
        if status == 202 and "id" in answer:
            return time.monotonic(), answer["id"], answers
        if status not in (0, 429, 503):
            raise LabError(f"DELETE /v1/users/{{u}} answered {text}: {json.dumps(answer)[:300]}")
        if time.monotonic() > deadline:
            break
        time.sleep(0.1)
    raise LabError(f"DELETE /v1/users/{{u}} not accepted within {seconds} s: {answers}")


def wait_done(client, key, erasure_id, seconds, interval, progress=None):
    """Polls GET /v1/erasures/{id} every `interval` until `done`: (the record, when done was
    seen), or (the last record, None) after `seconds`. `progress(record)` is called each poll."""
    deadline = time.monotonic() + seconds
    record = {}
    for _ in range(int(seconds / interval) + 10):
        text, status, answer, _ = client.outcome("GET", f"/v1/erasures/{erasure_id}", key)
        if status == 200:
            record = answer
            if progress:
                progress(record)
            if record.get("status") == "done":
                return record, time.monotonic()
        elif status not in (0, 503):
            raise LabError(f"GET /v1/erasures/{{id}} answered {text}: {json.dumps(answer)[:300]}")
        if time.monotonic() > deadline:
            break
        time.sleep(interval)
    return record, None


def small_erasure(port, keys, run, number, watch=None):
    """Tenant B's small erasure: a person of one device and 3 events appended, then erased; the
    seconds from the 202 until GET /v1/erasures/{id} says done (polled every 50 ms), and the
    record's own requestedAt to completedAt. `watch()`, when given, says whether the other
    tenant's large erasure was still pending when the 202 came."""
    client = Client(port)
    user = f"b-{run}-{number}"
    now = int(time.time())
    events = [
        {"id": str(uuid.uuid4()), "userId": user, "deviceId": "phone", "occurredAt": iso(now - 3),
         "type": "contextReported", "data": CONTEXT},
        {"id": str(uuid.uuid4()), "userId": user, "deviceId": "phone", "occurredAt": iso(now - 2),
         "type": "statusObserved", "data": {"status": "authorizedWhenInUse"}},
        {"id": str(uuid.uuid4()), "userId": user, "deviceId": "phone", "occurredAt": iso(now - 1),
         "type": "appStateChanged", "data": {"state": "background"}},
    ]
    appended, append_answers = time.monotonic(), {}
    deadline = appended + 30
    for _ in range(1000):
        text, status, answer, _ = client.outcome("POST", "/v1/events", keys["ingest"], {"events": events})
        count(append_answers, text)
        if status == 200:
            break
        if status not in (0, 503):
            raise LabError(f"tenant B's append answered {text}: {json.dumps(answer)[:300]}")
        if time.monotonic() > deadline:
            raise LabError(f"tenant B's 3 events were not stored within 30 s: {append_answers}")
        time.sleep(0.1)
    append_seconds = time.monotonic() - appended
    accepted, erasure_id, delete_answers = erase(client, keys["admin"], user)
    other_pending = watch() if watch else None
    record, seen = wait_done(client, keys["admin"], erasure_id, 120, 0.05)
    client.close()
    sample = {
        "appendSeconds": round(append_seconds, 3), "appendAnswers": append_answers, "deleteAnswers": delete_answers,
        "seconds": round(seen - accepted, 3) if seen else None,
        "serverSeconds": seconds_between(record["requestedAt"], record["completedAt"]) if seen and record.get("completedAt") else None,
        "recordEvents": record.get("events"), "recordDevices": record.get("devices"), "attempts": record.get("attempts"),
    }
    if other_pending is not None:
        sample["otherErasurePendingAt202"] = other_pending
    log(f"B's erasure {number}: 202 to done {sample['seconds']} s (server {sample['serverSeconds']} s)"
        + (f", A's large erasure pending: {other_pending}" if other_pending is not None else ""))
    return sample


def small_erasure_failures(samples, where):
    failures = []
    for index, sample in enumerate(samples):
        if sample["seconds"] is None:
            failures.append(f"{where}: B's erasure {index} not done within 120 s of its 202")
        elif sample["seconds"] > SMALL_ERASURE_BOUND_SECONDS:
            failures.append(f"{where}: B's erasure {index} done {sample['seconds']} s after its 202 "
                            f"(server {sample['serverSeconds']} s), over {SMALL_ERASURE_BOUND_SECONDS:.0f} s")
        refused = {text: n for answers, good in ((sample["appendAnswers"], "HTTP 200"), (sample["deleteAnswers"], "HTTP 202"))
                   for text, n in answers.items() if text != good}
        if refused:
            failures.append(f"{where}: B's erasure {index}: its append or DELETE was refused before it went through: {refused}")
        if sample["seconds"] is not None and (sample["recordEvents"], sample["recordDevices"]) != (3, 1):
            failures.append(f"{where}: B's erasure {index} recorded {sample['recordEvents']} events of "
                            f"{sample['recordDevices']} devices, not 3 of 1")
    if not samples:
        failures.append(f"{where}: no erasure of B was measured")
    return failures


def samples_summary(samples):
    seconds = [sample["seconds"] for sample in samples if sample["seconds"] is not None]
    return {"count": len(samples), "secondsMax": max(seconds) if seconds else None,
            "secondsP50": percentile(seconds, 0.5), "samples": samples}


# MARK: - Resident memory

class RSSSampler(threading.Thread):
    """VmRSS of a process every 100 ms, for at most `seconds`."""

    def __init__(self, pid, seconds):
        super().__init__(daemon=True)
        self.pid, self.seconds = pid, seconds
        self.samples = []  # (monotonic, kB)
        self.halt = threading.Event()

    def read(self):
        try:
            with open(f"/proc/{self.pid}/status") as handle:
                for line in handle:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            return None
        return None

    def run(self):
        deadline = time.monotonic() + self.seconds
        for _ in range(int(self.seconds * 10) + 1):
            if self.halt.is_set() or time.monotonic() > deadline:
                return
            kilobytes = self.read()
            if kilobytes is not None:
                self.samples.append((time.monotonic(), kilobytes))
            self.halt.wait(0.1)

    def wait_for(self, samples, seconds=10):
        deadline = time.monotonic() + seconds
        for _ in range(seconds * 20 + 20):
            if len(self.samples) >= samples:
                return
            if time.monotonic() > deadline or not self.is_alive():
                break
            time.sleep(0.05)
        raise LabError(f"fewer than {samples} RSS samples of process {self.pid} within {seconds} s")

    def stop(self):
        self.halt.set()
        self.join(10)


def mb(kilobytes):
    return round(kilobytes / 1024, 1) if kilobytes is not None else None


# MARK: - Phase 1: erase-large

def person_streams(user, events, devices):
    """One person's devices, the events shared out between them: (user, device, events)."""
    share, extra = divmod(events, devices)
    streams = [(user, f"{user}-d{n}", share + (1 if n < extra else 0)) for n in range(devices)]
    return [stream for stream in streams if stream[2] > 0]


def erasure_deadline(events):
    """30 min for a million events; at least 5 min."""
    return max(300, min(1800, int(events * 0.002)))


def erase_large_phase(args, servers, apps, port, run):
    a = apps["A"]
    events = args.events or (50_000 if args.short else 1_000_000)
    process = servers.start(port, *args.serve_args)
    failures = []
    try:
        wait_single_server(args)
        user = f"large-{run}"
        streams = person_streams(user, events, args.devices)
        log(f"appending A's person: {events:,} events on {len(streams)} devices, {args.load_threads} client threads")
        loaded = load(port, a["ingest"], streams, args.load_threads, max(600, events // 200), "erase-large")
        log(f"appended in {loaded['seconds']} s ({loaded['eventsPerSecond']:,} events/s)")
        deadline = erasure_deadline(events)
        sampler = RSSSampler(process.pid, deadline + 120)
        sampler.start()
        client = Client(port)
        try:
            sampler.wait_for(10)  # a second of samples before the request
            before = sampler.samples[-1][1]
            sent = time.monotonic()
            accepted, erasure_id, answers = erase(client, a["admin"], user)
            last_report = [time.monotonic()]

            def progress(record):
                if time.monotonic() - last_report[0] >= 15:
                    last_report[0] = time.monotonic()
                    current = sampler.samples[-1][1] if sampler.samples else None
                    log(f"erasing: {record.get('events', 0):,} of {events:,} events erased, RSS {mb(current)} MB")

            log(f"DELETE /v1/users/{{u}} accepted; waiting for done (deadline {deadline} s)")
            record, seen = wait_done(client, a["admin"], erasure_id, deadline, 0.5, progress)
        finally:
            client.close()
            sampler.stop()
        end = seen if seen else time.monotonic()
        during = [kb for at, kb in sampler.samples if sent <= at <= end]
        peak = max(during) if during else None
        growth = mb(peak - before) if peak is not None else None
        result = {
            "events": events, "devices": len(streams), "load": loaded, "deleteAnswers": answers,
            "done": seen is not None, "secondsToDone": round(seen - accepted, 1) if seen else None,
            "serverSecondsToDone": seconds_between(record["requestedAt"], record["completedAt"]) if seen else None,
            "recordEvents": record.get("events"), "recordDevices": record.get("devices"),
            "attempts": record.get("attempts"), "lastError": record.get("lastError"),
            "rssBeforeMB": mb(before), "rssPeakMB": mb(peak), "rssGrowthMB": growth,
            "rssAfterMB": mb(sampler.samples[-1][1]) if sampler.samples else None, "rssSamples": len(during),
            "boundGrowthMB": RSS_GROWTH_BOUND_MB,
        }
        if seen is None:
            failures.append(f"erase-large: the erasure of {events:,} events was not done within {deadline} s "
                            f"({record.get('events')} erased, attempts {record.get('attempts')}, lastError {record.get('lastError')})")
        else:
            result["left"] = person_rows(args, a["appId"], user)
            if any(result["left"].values()):
                failures.append(f"erase-large: rows of the erased person remain: {result['left']}")
            if (record.get("events"), record.get("devices")) != (events, len(streams)):
                failures.append(f"erase-large: the record counts {record.get('events')} events of {record.get('devices')} devices, "
                                f"{events} of {len(streams)} were appended")
        if growth is None:
            failures.append("erase-large: no RSS sample during the erasure")
        elif growth >= RSS_GROWTH_BOUND_MB:
            failures.append(f"erase-large: the server's RSS grew by {growth} MB during the erasure "
                            f"({mb(before)} -> {mb(peak)} MB), bound {RSS_GROWTH_BOUND_MB} MB")
        log(f"{events:,} events erased in {result['secondsToDone']} s; RSS {result['rssBeforeMB']} MB before, "
            f"peak {result['rssPeakMB']} MB, growth {growth} MB (bound < {RSS_GROWTH_BOUND_MB}); left {result.get('left')}")
        return result, failures
    finally:
        servers.stop(port)


# MARK: - Phase 2: erasure-flood

def flood_worker(port, key, run, threads, seconds, queue):
    """Tenant A's flood, in a process of its own (so that its threads do not slow the measuring
    client): DELETE /v1/users/flood-... for distinct unknown users from `threads` threads for
    `seconds`, answers counted by outcome."""
    try:
        stop_at = time.monotonic() + seconds
        lock = threading.Lock()
        answers, latencies = {}, []

        def worker(number):
            client = Client(port)
            local, times = {}, []
            for index in range(1_000_000):
                if time.monotonic() >= stop_at:
                    break
                text, status, _, milliseconds = client.outcome("DELETE", f"/v1/users/flood-{run}-{number}-{index}", key)
                count(local, text)
                times.append(milliseconds)
                if status == 0:
                    time.sleep(0.05)
            client.close()
            with lock:
                for text, n in local.items():
                    count(answers, text, n)
                latencies.extend(times)

        workers = [threading.Thread(target=worker, args=(n,)) for n in range(threads)]
        started = time.monotonic()
        for thread in workers:
            thread.start()
        for thread in workers:
            thread.join()
        elapsed = time.monotonic() - started
        queue.put({"threads": threads, "seconds": round(elapsed, 1), "requests": len(latencies),
                   "requestsPerSecond": round(len(latencies) / max(elapsed, 0.001)), "answers": answers,
                   "p50ms": percentile(latencies, 0.5), "p99ms": percentile(latencies, 0.99)})
    except Exception:  # noqa: BLE001 (reported to the parent)
        queue.put({"error": traceback.format_exc()})


def drain(args, app_id, seconds, label):
    """Waits until the app has no erasure pending: (seconds it took, or None, pending left)."""
    started = time.monotonic()
    deadline = started + seconds
    pending = pending_erasures(args, app_id)
    last_report = started
    for _ in range(seconds * 2 + 10):
        if pending == 0:
            return round(time.monotonic() - started, 1), 0
        if time.monotonic() > deadline:
            break
        if time.monotonic() - last_report >= 15:
            last_report = time.monotonic()
            log(f"{label}: {pending:,} of A's erasures still pending")
        time.sleep(0.5)
        pending = pending_erasures(args, app_id)
    return (round(time.monotonic() - started, 1), 0) if pending == 0 else (None, pending)


def erasure_flood_phase(args, servers, apps, port, run):
    a, b = apps["A"], apps["B"]
    seconds = 5 if args.short else 15
    failures = []
    servers.start(port, *args.serve_args)
    try:
        wait_single_server(args)
        context = multiprocessing.get_context("fork")
        queue = context.Queue()
        flood = context.Process(target=flood_worker, args=(port, a["admin"], run, args.flood_threads, seconds, queue), daemon=True)
        started = time.monotonic()
        flood.start()
        log(f"A floods erasure requests from {args.flood_threads} threads for {seconds} s; B's erasures from 2 s on")
        samples = []
        try:
            # B's first erasure 2 s into the flood, then one after another while it lasts.
            time.sleep(max(0.0, started + 2 - time.monotonic()))
            for number in range(10):
                samples.append(small_erasure(port, b, run, f"flood-{number}"))
                if time.monotonic() >= started + seconds:
                    break
            result = queue.get(timeout=seconds + 120)
        finally:
            flood.join(30)
            if flood.is_alive():
                flood.kill()
                flood.join(10)
        if "error" in result:
            raise LabError(f"erasure-flood: the flooding process failed:\n{result['error']}")
        pending_at_end = pending_erasures(args, a["appId"])
        log(f"A's flood: {result['requests']:,} requests ({result['requestsPerSecond']:,}/s) {result['answers']}; "
            f"{pending_at_end:,} of A's erasures pending at its end")
        drain_limit = 600 if args.short else 1200
        drained, left = drain(args, a["appId"], drain_limit, "erasure-flood")
        log(f"A's backlog drained in {drained} s" if drained is not None else f"A's backlog: {left:,} still pending after {drain_limit} s")
        summary = samples_summary(samples)
        outcome = {"seconds": seconds, "flood": result, "aPendingAtFloodEnd": pending_at_end,
                   "aBacklogDrainSeconds": drained, "aPendingAfterDrainWait": left, "b": summary,
                   "boundSeconds": SMALL_ERASURE_BOUND_SECONDS}
        failures += small_erasure_failures(samples, "erasure-flood")
        # A's own requests may be shed (429, 503 overloaded); a 500 is a defect.
        if any(text.startswith("HTTP 500") for text in result["answers"]):
            failures.append(f"erasure-flood: A's flood got 500 answers: {result['answers']}")
        if drained is None:
            failures.append(f"erasure-flood: {left:,} of A's erasures still pending {drain_limit} s after the flood")
        if pending_at_end > 10_000:
            failures.append(f"erasure-flood: {pending_at_end:,} of A's erasures pending at once, over SPEC's 10,000")
        log(f"B's erasures during A's flood: {summary['count']}, 202 to done max {summary['secondsMax']} s "
            f"(bound {SMALL_ERASURE_BOUND_SECONDS:.0f} s)")
        return outcome, failures
    finally:
        servers.stop(port)


# MARK: - Phase 2b: erasure-beside-large

def erasure_beside_large_phase(args, servers, apps, port, run):
    a, b = apps["A"], apps["B"]
    events = args.large_events or (20_000 if args.short else 200_000)
    failures = []
    servers.start(port, *args.serve_args)
    try:
        wait_single_server(args)
        drained, left = drain(args, a["appId"], 600, "erasure-beside-large")
        if drained is None:
            reason = f"{left:,} of A's erasures still pending after 600 s: A's large erasure would wait behind them"
            return {"skipped": reason}, [f"erasure-beside-large: not run, {reason}"]
        user = f"big-{run}"
        streams = person_streams(user, events, args.devices)
        log(f"appending A's person: {events:,} events on {len(streams)} devices")
        loaded = load(port, a["ingest"], streams, args.load_threads, max(600, events // 200), "erasure-beside-large")
        client = Client(port)
        try:
            accepted, erasure_id, _ = erase(client, a["admin"], user)
            # Wait until A's erasure is under way (its first page gone) before B's erasures.
            deadline = time.monotonic() + 120
            record = {}
            for _ in range(2400):
                text, status, record, _ = client.outcome("GET", f"/v1/erasures/{erasure_id}", a["admin"])
                if status == 200 and (record.get("events", 0) > 0 or record.get("status") == "done"):
                    break
                if time.monotonic() > deadline:
                    raise LabError(f"erasure-beside-large: A's erasure erased nothing within 120 s of its 202 ({text} {record})")
                time.sleep(0.05)
            watch_client = Client(port)

            def watch():
                _, status, answer, _ = watch_client.outcome("GET", f"/v1/erasures/{erasure_id}", a["admin"])
                return answer.get("status") == "pending" if status == 200 else None

            samples = []
            for number in range(5):
                if number > 0 and not watch():
                    break
                samples.append(small_erasure(port, b, run, f"beside-{number}", watch))
            watch_client.close()
            limit = erasure_deadline(events)
            record, seen = wait_done(client, a["admin"], erasure_id, limit, 0.5)
        finally:
            client.close()
        summary = samples_summary(samples)
        during = sum(1 for sample in samples if sample.get("otherErasurePendingAt202"))
        outcome = {"events": events, "load": loaded, "aDone": seen is not None,
                   "aSecondsToDone": round(seen - accepted, 1) if seen else None,
                   "aRecordEvents": record.get("events"), "b": summary, "bDuringA": during,
                   "boundSeconds": SMALL_ERASURE_BOUND_SECONDS}
        failures += small_erasure_failures(samples, "erasure-beside-large")
        if seen is None:
            failures.append(f"erasure-beside-large: A's erasure of {events:,} events not done within {limit} s")
        elif record.get("events") != events:
            failures.append(f"erasure-beside-large: A's record counts {record.get('events')} events, {events} were appended")
        if during == 0:
            log("note: A's erasure was done before any of B's erasures was accepted: the figure is not one "
                "beside a large erasure (raise --large-events)")
        log(f"A's {events:,} events erased in {outcome['aSecondsToDone']} s; B's erasures beside it: {summary['count']} "
            f"({during} while A's was pending), 202 to done max {summary['secondsMax']} s")
        return outcome, failures
    finally:
        servers.stop(port)


# MARK: - Phase 3: stream-churn

def read_messages(response, wanted, seconds):
    """Reads an open SSE answer until `wanted` `data:` lines came, it ended, or `seconds`
    passed: (messages, stalled)."""
    deadline = time.monotonic() + seconds
    seen, tail = 0, b""
    for _ in range(100_000):
        if seen >= wanted or time.monotonic() > deadline:
            return seen, False
        try:
            chunk = response.read1(16384)
        except (OSError, http.client.HTTPException):
            return seen, True
        if not chunk:
            return seen, False
        seen += (tail + chunk).count(b"data:")
        tail = chunk[-4:]
    return seen, False


def churn_worker(port, key, targets, threads, seconds, quota, stop, ramped, queue):
    """Tenant A's push streams, in a process of its own: `threads` threads, more than the app's
    quota, each opening in turn a change feed from the start of the log (reading 1 to 400
    messages, then closing it) or an OFREP event stream (its URL from the bulk evaluation's
    `eventStreams`; the first message read, then held open 0.5 to 4 s unread, then closed),
    until `stop` is set or `seconds` passed."""
    try:
        hard_stop = time.monotonic() + seconds
        lock = threading.Lock()
        totals = {"opens": {}, "bulk": {}, "messages": 0, "stalled": 0, "open": 0, "peakOpen": 0, "iterations": 0,
                  "streamHosts": {}}
        started = time.monotonic()

        def opened(delta):
            with lock:
                totals["open"] += delta
                totals["peakOpen"] = max(totals["peakOpen"], totals["open"])
                if totals["open"] >= quota or time.monotonic() - started > 3:
                    ramped.set()

        def worker(number):
            rng = random.Random(number)
            client = Client(port)
            urls = {}
            for _ in range(1_000_000):
                if stop.is_set() or time.monotonic() >= hard_stop:
                    break
                with lock:
                    totals["iterations"] += 1
                feed = rng.random() < 0.6
                if feed:
                    kind, path = "changes", "/v1/changes?from=start"
                else:
                    kind = "ofrep"
                    target = targets[rng.randrange(len(targets))]
                    if target not in urls:
                        body = {"context": {"targetingKey": target[0], "deviceId": target[1]}}
                        text, status, answer, _ = client.outcome("POST", "/ofrep/v1/evaluate/flags", key, body)
                        with lock:
                            count(totals["bulk"], text)
                        streams = answer.get("eventStreams") if status == 200 else None
                        if not streams:
                            time.sleep(0.05)
                            continue
                        parsed = urllib.parse.urlsplit(streams[0]["url"])
                        with lock:
                            count(totals["streamHosts"], parsed.netloc)
                        # Whatever host the URL names, the request goes to 127.0.0.1.
                        urls[target] = parsed.path + ("?" + parsed.query if parsed.query else "")
                    path = urls[target]
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                try:
                    connection.request("GET", path, headers={"Authorization": f"Bearer {key}", "Accept": "text/event-stream"})
                    response = connection.getresponse()
                    if response.status != 200:
                        text = response.read()
                        try:
                            parsed_body = json.loads(text) if text else {}
                        except ValueError:
                            parsed_body = {}
                        with lock:
                            count(totals["opens"], f"{kind} {outcome_of(response.status, parsed_body)}")
                        time.sleep(0.05)
                        continue
                    with lock:
                        count(totals["opens"], f"{kind} HTTP 200")
                    opened(1)
                    try:
                        if feed:
                            messages, stalled = read_messages(response, rng.randint(1, 400), 3)
                        else:
                            messages, stalled = read_messages(response, 1, 3)
                            hold = time.monotonic() + rng.uniform(0.5, 4)
                            while time.monotonic() < min(hold, hard_stop) and not stop.is_set():
                                time.sleep(0.1)
                    finally:
                        opened(-1)
                    with lock:
                        totals["messages"] += messages
                        totals["stalled"] += int(stalled)
                except (OSError, http.client.HTTPException) as error:
                    with lock:
                        count(totals["opens"], f"{kind} connection {type(error).__name__}")
                    time.sleep(0.05)
                finally:
                    connection.close()
            client.close()

        workers = [threading.Thread(target=worker, args=(n,)) for n in range(threads)]
        for thread in workers:
            thread.start()
        for thread in workers:
            thread.join()
        totals["seconds"] = round(time.monotonic() - started, 1)
        totals["threads"], totals["quota"] = threads, quota
        del totals["open"]
        queue.put(totals)
    except Exception:  # noqa: BLE001 (reported to the parent)
        ramped.set()
        queue.put({"error": traceback.format_exc()})


def tenant_b_load(port, keys, users, seconds, threads):
    """Tenant B's requests in a closed loop from `threads` threads for `seconds`: in turn a gate
    of one of its devices (cached), a single-event append, a history page, and a gate of a device
    it never saw (a cache miss: a database read). Answers by request kind and outcome,
    milliseconds per kind."""
    kinds = ["gate", "append", "history", "gateMiss"]
    stop_at = time.monotonic() + seconds
    lock = threading.Lock()
    answers = {kind: {} for kind in kinds}
    latencies = {kind: [] for kind in kinds}

    def worker(number):
        rng = random.Random(1000 + number)
        client = Client(port, timeout=10)
        local = {kind: {} for kind in kinds}
        times = {kind: [] for kind in kinds}
        for index in range(10_000_000):
            if time.monotonic() >= stop_at:
                break
            kind = kinds[index % len(kinds)]
            user = users[rng.randrange(len(users))]
            if kind == "gate":
                call = ("GET", f"/v1/users/{user}/devices/phone/gates", keys["read"], None)
            elif kind == "append":
                event = {"id": str(uuid.uuid4()), "userId": user, "deviceId": "phone", "occurredAt": iso(time.time()),
                         "type": "appStateChanged", "data": {"state": "foreground" if index % 8 < 4 else "background"}}
                call = ("POST", "/v1/events", keys["ingest"], {"events": [event]})
            elif kind == "history":
                call = ("GET", f"/v1/users/{user}/devices/phone/history?limit=100", keys["read"], None)
            else:
                call = ("GET", f"/v1/users/miss-{rng.randrange(10**12)}/devices/phone/gates", keys["read"], None)
            text, status, _, milliseconds = client.outcome(*call)
            count(local[kind], text)
            times[kind].append(milliseconds)
            if status == 0:
                time.sleep(0.05)
        client.close()
        with lock:
            for kind in kinds:
                for text, n in local[kind].items():
                    count(answers[kind], text, n)
                latencies[kind].extend(times[kind])

    workers = [threading.Thread(target=worker, args=(n,)) for n in range(threads)]
    started = time.monotonic()
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    elapsed = time.monotonic() - started
    overall = {}
    for kind in kinds:
        for text, n in answers[kind].items():
            count(overall, text, n)
    requests = sum(len(values) for values in latencies.values())
    return {"seconds": round(elapsed, 1), "threads": threads, "requests": requests,
            "requestsPerSecond": round(requests / max(elapsed, 0.001)), "answers": overall, "answersByKind": answers,
            "p50ms": {kind: percentile(values, 0.5) for kind, values in latencies.items()},
            "p99ms": {kind: percentile(values, 0.99) for kind, values in latencies.items()}}


def stream_churn_phase(args, servers, apps, port, run):
    a, b = apps["A"], apps["B"]
    seconds = 8 if args.short else 20
    baseline_seconds = 2 if args.short else 5
    quota = args.stream_quota
    clients = args.stream_clients or quota + max(8, quota // 5)
    extra = ["--pool-size", str(args.pool_size), "--max-streams-per-app", str(quota)]
    if args.stream_reads:
        extra += ["--stream-reads", str(args.stream_reads)]
    failures = []
    servers.start(port, *extra, *args.serve_args)
    try:
        feed_users = [f"feed-{run}-{n}" for n in range(20)]
        log("appending 20,000 events for A (20 devices of 1,000) to catch up on")
        loaded = load(port, a["ingest"], [(user, "phone", 1000) for user in feed_users], args.load_threads, 600, "stream-churn")
        b_users = [f"bx-{run}-{n}" for n in range(50)]
        load(port, b["ingest"], [(user, "phone", 3) for user in b_users], args.load_threads, 120, "stream-churn B")
        log(f"B alone for {baseline_seconds} s (baseline)")
        baseline = tenant_b_load(port, b, b_users, baseline_seconds, args.b_threads)
        context = multiprocessing.get_context("fork")
        queue, stop, ramped = context.Queue(), context.Event(), context.Event()
        targets = [(user, "phone") for user in feed_users]
        churn = context.Process(target=churn_worker, args=(port, a["read"], targets, clients, seconds + 60, quota, stop, ramped, queue),
                                daemon=True)
        churn.start()
        try:
            if not ramped.wait(15):
                raise LabError("stream-churn: A's streams did not get going within 15 s")
            log(f"A churns push streams from {clients} threads (quota {quota}); B for {seconds} s beside it")
            during = tenant_b_load(port, b, b_users, seconds, args.b_threads)
            stop.set()
            result = queue.get(timeout=60)
        finally:
            stop.set()
            churn.join(30)
            if churn.is_alive():
                churn.kill()
                churn.join(10)
        if "error" in result:
            raise LabError(f"stream-churn: the churning process failed:\n{result['error']}")
        quota_reached = result["peakOpen"] >= quota or any("HTTP 429" in key for key in result["opens"])
        outcome = {"seconds": seconds, "poolSize": args.pool_size, "streamReads": args.stream_reads or "default (a quarter of the pool)",
                   "aLog": loaded, "a": result, "aQuotaReached": quota_reached, "bBaseline": baseline, "bDuringChurn": during}
        bad = {text: n for text, n in during["answers"].items() if text != "HTTP 200"}
        if bad:
            failures.append(f"stream-churn: B's requests beside A's streams were not all answered 200: {bad} "
                            f"(by kind: {during['answersByKind']})")
        if not quota_reached:
            log(f"note: A never held its whole quota ({result['peakOpen']} of {quota} open at most)")
        log(f"A: {sum(result['opens'].values()):,} stream opens {result['opens']}, peak {result['peakOpen']} open, "
            f"{result['messages']:,} messages read")
        log(f"B alone: {baseline['requestsPerSecond']:,}/s {baseline['answers']}, p99 ms {baseline['p99ms']}")
        log(f"B beside A: {during['requestsPerSecond']:,}/s {during['answers']}, p99 ms {during['p99ms']}")
        return outcome, failures
    finally:
        servers.stop(port)


# MARK: - Main

def main():
    parser = argparse.ArgumentParser(description="Whether one tenant can hurt another (Labs/tenants).")
    for name in ["binary", "database-url", "workdir", "results"]:
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--pg-port", type=int, required=True)
    parser.add_argument("--http-port", type=int, required=True)
    parser.add_argument("--short", action="store_true", help="smaller sizes and shorter phases")
    parser.add_argument("--phase", choices=PHASES, help="run this phase only")
    parser.add_argument("--events", type=int, help="erase-large: the person's events (1,000,000; --short 50,000)")
    parser.add_argument("--large-events", type=int, help="erasure-beside-large: A's person's events (200,000; --short 20,000)")
    parser.add_argument("--devices", type=int, default=4, help="devices of each large person")
    parser.add_argument("--load-threads", type=int, default=4, help="client threads appending")
    parser.add_argument("--flood-threads", type=int, default=8)
    parser.add_argument("--b-threads", type=int, default=4, help="stream-churn: tenant B's client threads")
    parser.add_argument("--pool-size", type=int, default=8, help="stream-churn: the server's --pool-size")
    parser.add_argument("--stream-reads", type=int, help="stream-churn: the server's --stream-reads (its default when unset)")
    parser.add_argument("--stream-quota", type=int, default=100, help="stream-churn: the server's --max-streams-per-app")
    parser.add_argument("--stream-clients", type=int, help="stream-churn: A's stream threads (quota + a fifth)")
    parser.add_argument("--serve-args", default=os.environ.get("LOCGATE_TENANTS_SERVE_ARGS", ""),
                        help="more `locgate serve` arguments for every phase's server")
    args = parser.parse_args()
    args.serve_args = args.serve_args.split()
    if args.devices < 1 or args.load_threads < 1 or args.flood_threads < 1 or args.b_threads < 1 or args.stream_quota < 1:
        parser.error("counts must be at least 1")

    token = "tenants-" + uuid.uuid4().hex  # 40 bytes: serve wants at least 32
    run = uuid.uuid4().hex[:10]
    servers = Servers(args.binary, args.database_url, token, args.workdir)
    phases = [args.phase] if args.phase else PHASES
    runners = {"erase-large": erase_large_phase, "erasure-flood": erasure_flood_phase,
               "erasure-beside-large": erasure_beside_large_phase, "stream-churn": stream_churn_phase}
    results = {"short": args.short, "phases": {}, "failures": []}
    failures = []

    def write():
        results["failures"] = failures
        with open(args.results, "w") as handle:
            json.dump(results, handle, indent=2, sort_keys=True)

    try:
        # The apps, on a server of their own (each phase then starts its own).
        setup_port = args.http_port
        servers.start(setup_port, *args.serve_args)
        apps = {"A": create_app(setup_port, token, "tenant A"), "B": create_app(setup_port, token, "tenant B")}
        servers.stop(setup_port)
        results["apps"] = {name: keys["appId"] for name, keys in apps.items()}
        for index, phase in enumerate(phases):
            print(f"{phase}", flush=True)
            started = time.monotonic()
            try:
                outcome, broken = runners[phase](args, servers, apps, args.http_port + 1 + index, run)
                for failure in broken:
                    print(f"  BOUND BROKEN: {failure}", flush=True)
            except Exception as error:  # noqa: BLE001 (the phase could not be measured; the next ones still run)
                if not isinstance(error, LabError):
                    traceback.print_exc()
                text = str(error) if isinstance(error, LabError) else repr(error)
                outcome, broken = {"error": text}, [f"{phase} could not run: {text}"]
                print(f"  {broken[0]}", flush=True)
            servers.stop_all()
            outcome["phaseSeconds"] = round(time.monotonic() - started, 1)
            results["phases"][phase] = outcome
            failures.extend(broken)
            write()
    except LabError as error:
        failures.append(f"the lab could not run: {error}")
    finally:
        servers.stop_all()
        write()

    print("summary", flush=True)
    phases_done = {phase: outcome for phase, outcome in results["phases"].items()
                   if "error" not in outcome and "skipped" not in outcome}
    if "erase-large" in phases_done:
        p = phases_done["erase-large"]
        print(f"  erase-large: {p['events']:,} events, done in {p['secondsToDone']} s; RSS {p['rssBeforeMB']} -> "
              f"{p['rssPeakMB']} MB (growth {p['rssGrowthMB']} MB, bound < {RSS_GROWTH_BOUND_MB}); left {p.get('left')}", flush=True)
    if "erasure-flood" in phases_done:
        p = phases_done["erasure-flood"]
        print(f"  erasure-flood: A {p['flood']['requests']:,} requests {p['flood']['answers']}; B's erasures 202 to done "
              f"max {p['b']['secondsMax']} s of {p['b']['count']}; A's backlog {p['aPendingAtFloodEnd']:,} drained in "
              f"{p['aBacklogDrainSeconds']} s", flush=True)
    if "erasure-beside-large" in phases_done:
        p = phases_done["erasure-beside-large"]
        print(f"  erasure-beside-large: A's {p['events']:,} events in {p['aSecondsToDone']} s; B's erasures 202 to done "
              f"max {p['b']['secondsMax']} s of {p['b']['count']} ({p['bDuringA']} during A's)", flush=True)
    if "stream-churn" in phases_done:
        p = phases_done["stream-churn"]
        print(f"  stream-churn: A {sum(p['a']['opens'].values()):,} opens, peak {p['a']['peakOpen']} of {p['a']['quota']}; "
              f"B {p['bDuringChurn']['requests']:,} requests {p['bDuringChurn']['answers']}", flush=True)
    if failures:
        print("FAILED: " + "; ".join(failures), flush=True)
        raise SystemExit(1)
    print("every bound held", flush=True)


if __name__ == "__main__":
    main()
