"""Fault injection against real processes: what Labs/faults runs after it started a durable
PostgreSQL cluster. Standard library only. Every request goes to 127.0.0.1, every loop is
bounded in count and time.

Phases:
  ingest   single-event appends from 8 clients through two servers while faults are injected
           (kill -9 of a server and its restart, a crash restart of PostgreSQL, every server
           connection terminated), with a noisy client sending bad input beside them; then
           every unacknowledged event is retried, and the log is read back: acknowledged /
           lost / duplicates / errors by code.
  coherence  an append through one server, its gate read through the other, while the LISTEN
           connections are terminated every 300 ms: convergence p50 / p99.
  erasure  people erased with DELETE /v1/users/{u} under a steady ingest of others, a fault
           injected as soon as each 202 arrives (kill -9 of the server that answered, a crash
           restart of PostgreSQL, kill -9 of every server), one person still appending while
           erased; then every erasure must reach `done` and nothing of a person from before
           the erasure may remain: seconds from 202 to done, rows left, half streams.
  overload a server with one database connection under 200 concurrent cache-missing gate
           reads: answers by code and latency.
"""
import argparse
import datetime
import http.client
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Deploy", "pylib"))
from loadclient import classify, event, percentile, request  # noqa: E402


class Servers:
    """The locgate serve processes, started and killed by port."""

    def __init__(self, binary, database_url, token, workdir):
        self.binary, self.database_url, self.token, self.workdir = binary, database_url, token, workdir
        self.processes = {}

    def start(self, port, *extra):
        log = open(os.path.join(self.workdir, f"server-{port}.log"), "ab")
        env = dict(os.environ, LOCGATE_DATABASE_URL=self.database_url, LOCGATE_ADMIN_TOKEN=self.token)
        self.processes[port] = subprocess.Popen(
            [self.binary, "serve", "--port", str(port), "--log-level", "warning", *extra], env=env, stdout=log, stderr=log)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if request("GET", port, "/healthz")[0] == 200:
                    return
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(0.05)
        raise RuntimeError(f"server on {port} did not start")

    def kill(self, port):
        process = self.processes.get(port)
        if process and process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait()

    def stop_all(self):
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()


def psql(args, sql):
    command = ["psql", "-X", "-At", "-h", "127.0.0.1", "-p", str(args.pg_port), "-U", "postgres", "-d", "locgate", "-c", sql]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def pg_restart(args):
    command = [args.pg_ctl, "-D", args.pgdata, "-m", "immediate", "-w", "-t", "60", "-l", args.pg_log, "restart"]
    if os.geteuid() == 0:
        command = ["runuser", "-u", "postgres", "--"] + command
    # From /: the clone may be a directory postgres cannot enter.
    subprocess.run(command, check=True, capture_output=True, cwd="/")


def ingest_phase(args, servers, key, ports):
    duration = 15 if args.short else 60
    stop = threading.Event()
    lock = threading.Lock()
    sent = {}            # id -> body
    acknowledged = set()  # acknowledged on first try
    errors = {}
    bad_inputs = {"sent": 0, "answers": {}}
    faults = {}

    def client(number):
        device, count = 0, 0
        while not stop.is_set():
            body = {"events": [event(f"u{number}", f"d{number}-{device}", count)]}
            identifier = body["events"][0]["id"]
            with lock:
                sent[identifier] = body
            port = ports[count % 2]
            try:
                status, answer = request("POST", port, "/v1/events", key, body)
                outcome = "ok" if status == 200 else classify(status, answer)
            except (OSError, http.client.HTTPException) as error:
                outcome = f"connection {type(error).__name__}"
            with lock:
                if outcome == "ok":
                    acknowledged.add(identifier)
                else:
                    errors[outcome] = errors.get(outcome, 0) + 1
            count += 1
            if count % 20 == 0:
                device += 1
            if outcome != "ok":
                time.sleep(0.05)

    hostile = [
        b'{"events": [{"id": "%s", "userId": "u", "deviceId": "d", "occurredAt": "2026-11-22T10:00:00Z", "type": "contextReported", "data": {"appVersion": "a\\u0000b"}}]}',
        b'{"events": [{"id": "%s", "userId": "u", "deviceId": "d", "occurredAt": "2026-11-22T10:00:00Z", "type": "contextReported", "data": {"appVersion": "' + b"x" * 65 + b'"}}]}',
        b'{"events": [{"id": "%s", "userId": "u\\u0007", "deviceId": "d", "occurredAt": "2026-11-22T10:00:00Z", "type": "appStateChanged", "data": {"state": "foreground"}}]}',
        b'{"events": [{"id": "%s", "userId": "u", "deviceId": "d", "occurredAt": "2026-11-22T10:00:00Z", "type": "promptResponded", "data": {"choice": "allowOnce"}}]}',
        b'{"events": [',
        b'%s',
    ]

    def noisy():
        index = 0
        while not stop.is_set():
            template = hostile[index % len(hostile)]
            raw = template % str(uuid.uuid4()).encode() if b"%s" in template else template
            if template == b"%s":
                raw = bytes(random.getrandbits(8) for _ in range(64))
            try:
                status, answer = request("POST", ports[index % 2], "/v1/events", key, raw=raw)
                outcome = classify(status, answer)
            except (OSError, http.client.HTTPException) as error:
                outcome = f"connection {type(error).__name__}"
            with lock:
                bad_inputs["sent"] += 1
                bad_inputs["answers"][outcome] = bad_inputs["answers"].get(outcome, 0) + 1
            index += 1
            time.sleep(0.02)

    def injector():
        kinds = ["kill -9 server A", "PostgreSQL crash restart", "terminate every server connection", "kill -9 server B"]
        index = 0
        while not stop.is_set():
            time.sleep(1.5 if args.short else 3)
            if stop.is_set():
                break
            kind = kinds[index % len(kinds)]
            started = time.monotonic()
            if kind.startswith("kill -9"):
                port = ports[0] if kind.endswith("A") else ports[1]
                servers.kill(port)
                time.sleep(0.5)
                servers.start(port)
            elif kind.startswith("PostgreSQL"):
                pg_restart(args)
            else:
                psql(args, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                           "WHERE datname = 'locgate' AND usename = 'locgate_app'")
            faults[kind] = faults.get(kind, 0) + 1
            print(f"  fault: {kind} ({time.monotonic() - started:.1f} s)", flush=True)
            index += 1

    threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
    threads += [threading.Thread(target=noisy), threading.Thread(target=injector)]
    for thread in threads:
        thread.start()
    time.sleep(duration)
    stop.set()
    for thread in threads:
        thread.join()
    # Every server up again before the retries.
    for port in ports:
        if servers.processes[port].poll() is not None:
            servers.start(port)
    pending = [identifier for identifier in sent if identifier not in acknowledged]
    landed_before, stored_fresh, never = 0, 0, []
    deadline = time.monotonic() + 60
    for identifier in pending:
        while True:
            try:
                status, answer = request("POST", ports[0], "/v1/events", key, sent[identifier])
            except (OSError, http.client.HTTPException):
                status, answer = 0, {}
            if status == 200:
                if answer["results"][0]["duplicate"]:
                    landed_before += 1
                else:
                    stored_fresh += 1
                break
            if time.monotonic() > deadline:
                never.append(identifier)
                break
            time.sleep(0.2)
    stored = set(psql(args, "SELECT event_id FROM events").split())
    lost = [identifier for identifier in acknowledged if identifier not in stored]
    unknown = [identifier for identifier in stored if identifier not in sent]
    server_errors = sum(count for outcome, count in list(errors.items()) + list(bad_inputs["answers"].items())
                        if outcome.startswith("HTTP 500"))
    return {
        "seconds": duration, "faults": faults, "sent": len(sent), "acknowledged": len(acknowledged),
        "lost": len(lost), "unacknowledgedRetried": len(pending), "retriesAnsweredDuplicate": landed_before,
        "retriesStoredFresh": stored_fresh, "neverAcknowledged": len(never), "storedNotSent": len(unknown),
        "errorsByCode": errors, "badInputs": bad_inputs, "http500": server_errors,
    }


def coherence_phase(args, key, ports):
    samples = 40 if args.short else 200
    stop = threading.Event()
    cuts = [0]

    def cutter():
        while not stop.is_set():
            try:
                cuts[0] += int(psql(args, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                          "WHERE application_name = 'locgate-listen'").strip() or 0)
            except subprocess.CalledProcessError:
                pass
            stop.wait(0.3)

    thread = threading.Thread(target=cutter)
    thread.start()
    latencies, stale = [], 0
    try:
        for index in range(samples):
            device = f"conv-{index % 20}"
            request("GET", ports[1], f"/v1/users/conv/devices/{device}/gates", key)  # cached on B
            status, answer = request("POST", ports[0], "/v1/events", key, {"events": [event("conv", device, index)]})
            if status != 200:
                continue
            version = answer["results"][0]["version"]
            acknowledged = time.monotonic()
            while True:
                status, gate = request("GET", ports[1], f"/v1/users/conv/devices/{device}/gates", key)
                if status == 200 and gate.get("version", 0) >= version:
                    latencies.append((time.monotonic() - acknowledged) * 1000)
                    break
                if time.monotonic() - acknowledged > 5:
                    stale += 1
                    break
                time.sleep(0.01)
            time.sleep(0.1)  # samples spread over the cuts
    finally:
        stop.set()
        thread.join()
    return {"samples": len(latencies), "listenerCuts": cuts[0], "p50ms": percentile(latencies, 0.5),
            "p99ms": percentile(latencies, 0.99), "maxms": max(latencies) if latencies else None,
            "over1s": sum(1 for value in latencies if value > 1000), "neverConverged": stale}


def seconds_between(start, end):
    """Seconds from one RFC 3339 time of an answer to another."""
    def parse(text):
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return round((parse(end) - parse(start)).total_seconds(), 3)


ERASURE_FAULTS = ["kill -9 of the answering server", "PostgreSQL crash restart", "kill -9 of every server"]


def erasure_phase(args, servers, key, ports):
    """An acknowledged erasure is never undone by a crash. The 202 of DELETE /v1/users/{u} comes
    once the erasure's record and work row are committed; phase 1 (the person's rows deleted)
    and phase 2 (every live server acknowledges) happen later in the servers' workers. So a fault
    right after the 202 (before phase 1 as a rule, sometimes between the phases) must neither
    lose the erasure nor leave it pending: each erasure must become `done`, and nothing of the
    person stored before it may remain. The last persons keep receiving appends from a client
    thread while they are erased: those appends are wholly before the erasure (and erased) or
    wholly after it (and kept, as new devices from version 1), never half. Bystanders append
    throughout; none of theirs may be lost."""
    count, racers = (4, 1) if args.short else (6, 2)
    run = uuid.uuid4().hex[:12]
    stop = threading.Event()
    lock = threading.Lock()
    errors = {}
    bystanders = set()  # acknowledged bystander event ids
    threads = []

    def send(method, port, path, body=None):
        """(status, answer); every answer but a success is counted by code, status 0 when the
        connection failed."""
        try:
            status, answer = request(method, port, path, key, body)
        except (OSError, http.client.HTTPException) as error:
            status, answer, outcome = 0, {}, f"connection {type(error).__name__}"
        else:
            outcome = None if status < 300 else classify(status, answer)
        if outcome:
            with lock:
                errors[outcome] = errors.get(outcome, 0) + 1
        return status, answer

    def bystander(number):
        index = 0
        while not stop.is_set():
            body = {"events": [event(f"bystander-{run}-{number}", f"d{number}-{index // 20}", index)]}
            status, _ = send("POST", ports[index % 2], "/v1/events", body)
            if status == 200:
                with lock:
                    bystanders.add(body["events"][0]["id"])
            index += 1
            time.sleep(0.01 if status == 200 else 0.05)

    def racer(person):
        index = 0
        while not stop.is_set():
            body = {"events": [event(person["user"], person["devices"][index % len(person["devices"])], index)]}
            status, _ = send("POST", ports[index % 2], "/v1/events", body)
            if status == 200:
                with lock:
                    person["acknowledged"][body["events"][0]["id"]] = time.monotonic()
            index += 1
            time.sleep(0.005 if status == 200 else 0.05)

    def populate(person, port):
        """The person's devices and events in one batch, sent again (same ids) until stored."""
        events = [event(person["user"], person["devices"][index % len(person["devices"])], index)
                  for index in range(random.randint(50, 200))]
        deadline = time.monotonic() + 30
        while send("POST", port, "/v1/events", {"events": events})[0] != 200:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the events of {person['user']} were never stored")
            time.sleep(0.1)
        acknowledged = time.monotonic()
        with lock:
            person["acknowledged"].update((item["id"], acknowledged) for item in events)
        return len(events)

    def erase(user, port):
        """(when the accepted request was sent, the erasure's id, attempts); the id is None
        when no attempt was accepted within 30 s."""
        deadline, attempts = time.monotonic() + 30, 0
        while time.monotonic() < deadline:
            attempts += 1
            sent = time.monotonic()
            status, answer = send("DELETE", port, f"/v1/users/{user}")
            if status == 202:
                return sent, answer["id"], attempts
            time.sleep(0.1)
        return None, None, attempts

    def inject(kind, port):
        started = time.monotonic()
        if kind == "kill -9 of the answering server":
            servers.kill(port)
            servers.start(port)
        elif kind == "PostgreSQL crash restart":
            pg_restart(args)
        else:
            for each in ports:
                servers.kill(each)
            for each in ports:
                servers.start(each)
        return time.monotonic() - started

    threads += [threading.Thread(target=bystander, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    persons, faults, records = [], {}, {}
    try:
        for number in range(count):
            user = f"erase-{uuid.uuid4().hex}"
            person = {"user": user, "devices": [f"{user}-d{n}" for n in range(random.randint(2, 4))], "acknowledged": {},
                      "racing": number >= count - racers, "fault": ERASURE_FAULTS[number % len(ERASURE_FAULTS)]}
            port = ports[number % 2]
            person["stored"] = populate(person, port)
            if person["racing"]:
                thread = threading.Thread(target=racer, args=(person,))
                threads.append(thread)
                thread.start()
                deadline = time.monotonic() + 2
                while len(person["acknowledged"]) < person["stored"] + 5 and time.monotonic() < deadline:
                    time.sleep(0.02)
            person["sent"], person["id"], person["attempts"] = erase(user, port)
            persons.append(person)
            if person["id"]:
                person["faultAt"] = time.time()
                took = inject(person["fault"], port)
                faults[person["fault"]] = faults.get(person["fault"], 0) + 1
                print(f"  fault: {person['fault']} after erasure {number + 1} ({took:.1f} s)", flush=True)
        # Servers are up again (each fault restarted what it killed); the erasures must finish.
        waiting = [person["id"] for person in persons if person["id"]]
        deadline, index = time.monotonic() + 30, 0
        while waiting and time.monotonic() < deadline:
            for identifier in list(waiting):
                status, answer = send("GET", ports[index % 2], f"/v1/erasures/{identifier}")
                index += 1
                if status == 200 and answer.get("status") == "done":
                    records[identifier] = answer
                    waiting.remove(identifier)
            if waiting:
                time.sleep(0.1)
    finally:
        stop.set()
        for thread in threads:
            thread.join()

    entries = []
    for person in persons:
        user, identifier = person["user"], person["id"]
        entry = {"id": identifier, "fault": person["fault"] if identifier else None, "racing": person["racing"],
                 "devices": len(person["devices"]), "deleteAttempts": person["attempts"]}
        entries.append(entry)
        if not identifier:
            continue
        before = {event_id for event_id, at in person["acknowledged"].items() if at < person["sent"]}
        stored = set(psql(args, f"SELECT event_id FROM events WHERE user_id = '{user}'").split())
        row = psql(args, f"""
            WITH kept AS (SELECT device_id, count(DISTINCT version) AS n, min(version) AS lo, max(version) AS hi
                          FROM events WHERE user_id = '{user}' GROUP BY device_id),
                 s AS (SELECT device_id, version FROM streams WHERE user_id = '{user}'),
                 d AS (SELECT device_id, version FROM device_states WHERE user_id = '{user}')
            SELECT (SELECT count(*) FROM s), (SELECT count(*) FROM d),
                   (SELECT count(*) FROM stream_snapshots WHERE user_id = '{user}'),
                   (SELECT count(*) FROM kept FULL JOIN s USING (device_id) FULL JOIN d USING (device_id)
                    WHERE kept.lo IS DISTINCT FROM 1 OR kept.hi IS DISTINCT FROM kept.n
                       OR s.version IS DISTINCT FROM kept.hi OR d.version IS DISTINCT FROM kept.hi),
                   coalesce((SELECT extract(epoch FROM erased_at)::text FROM erasures WHERE id = '{identifier}'), '')
            """).strip()
        streams, states, snapshots, half, erased_at = row.split("|")
        # Of a person who stopped appending, every row left survived the erasure. Of a racing
        # person: the events acknowledged before the DELETE was sent; what they kept must be
        # whole streams (versions 1..n, with the stream and the device state at n), which
        # `half` counts otherwise.
        if person["racing"]:
            survived = len(before & stored) + int(snapshots)
        else:
            survived = len(stored) + int(streams) + int(states) + int(snapshots)
        record = records.get(identifier)
        entry.update({
            "eventsBefore": len(before), "done": record is not None,
            "secondsToDone": seconds_between(record["requestedAt"], record["completedAt"]) if record else None,
            "phase1BeforeFault": float(erased_at) < person["faultAt"] if erased_at else None,
            "recordEvents": record["events"] if record else None, "recordDevices": record["devices"] if record else None,
            "keptAfter": len(stored - before) if person["racing"] else 0,
            "survived": survived, "halfStreams": int(half),
        })
        if record:
            expected = (record["events"] == len(before) and record["devices"] == len(person["devices"])
                        if not person["racing"] else record["events"] >= len(before))
            entry["recordMismatch"] = not expected
    stored = set(psql(args, f"SELECT event_id FROM events WHERE user_id LIKE 'bystander-{run}-%'").split())
    timings = [entry["secondsToDone"] for entry in entries if entry.get("secondsToDone") is not None]
    return {
        "persons": count, "racing": racers, "faults": faults, "erasures": entries,
        "neverAccepted": sum(1 for entry in entries if not entry["id"]),
        "notDone": sum(1 for entry in entries if entry["id"] and not entry["done"]),
        "secondsToDoneP50": percentile(timings, 0.5), "secondsToDoneMax": max(timings) if timings else None,
        "survived": sum(entry.get("survived", 0) for entry in entries),
        "halfStreams": sum(entry.get("halfStreams", 0) for entry in entries),
        "recordMismatches": sum(1 for entry in entries if entry.get("recordMismatch")),
        "bystandersAcknowledged": len(bystanders), "bystandersLost": len(bystanders - stored),
        "errorsByCode": errors, "http500": sum(n for outcome, n in errors.items() if outcome.startswith("HTTP 500")),
    }


def overload_phase(args, servers, key, port):
    servers.start(port, "--pool-size", "1", *args.overload_args.split())
    duration = 5 if args.short else 10
    stop = time.monotonic() + duration
    lock = threading.Lock()
    answers, latencies, shed = {}, [], []

    def worker():
        while time.monotonic() < stop:
            path = f"/v1/users/ov-{random.randrange(10**9)}/devices/{random.randrange(10**9)}/gates"
            started = time.monotonic()
            try:
                status, body = request("GET", port, path, key, timeout=15)
                outcome = "HTTP 200" if status == 200 else classify(status, body)
            except (OSError, http.client.HTTPException) as error:
                outcome = f"connection {type(error).__name__}"
            elapsed = (time.monotonic() - started) * 1000
            with lock:
                answers[outcome] = answers.get(outcome, 0) + 1
                latencies.append(elapsed)
                if outcome.startswith("HTTP 503"):
                    shed.append(elapsed)

    threads = [threading.Thread(target=worker) for _ in range(200)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    servers.kill(port)
    return {"clients": 200, "seconds": duration, "answers": answers, "requestsPerSecond": round(len(latencies) / duration),
            "p50ms": percentile(latencies, 0.5), "p99ms": percentile(latencies, 0.99), "maxms": max(latencies),
            "shedP50ms": percentile(shed, 0.5), "shedP99ms": percentile(shed, 0.99)}


def main():
    parser = argparse.ArgumentParser()
    for name in ["binary", "database-url", "pg-ctl", "pgdata", "pg-log", "workdir", "results"]:
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--pg-port", type=int, required=True)
    parser.add_argument("--http-port", type=int, required=True)
    parser.add_argument("--short", action="store_true")
    parser.add_argument("--overload-args", default=os.environ.get("LOCGATE_FAULTS_OVERLOAD_ARGS", ""))
    args = parser.parse_args()
    token = "faults-" + uuid.uuid4().hex
    servers = Servers(args.binary, args.database_url, token, args.workdir)
    ports = [args.http_port, args.http_port + 1]
    results = {}
    try:
        for port in ports:
            servers.start(port)
        status, app = request("POST", ports[0], "/v1/apps", token, {"name": "faults"})
        key = app["apiKey"]
        request("PUT", ports[0], "/v1/features/nearby", key, {"requires": "whenInUse"})
        print("ingest under faults", flush=True)
        results["ingest"] = ingest_phase(args, servers, key, ports)
        print(json.dumps(results["ingest"], indent=2), flush=True)
        print("coherence with the LISTEN connections cut", flush=True)
        results["coherence"] = coherence_phase(args, key, ports)
        print(json.dumps(results["coherence"], indent=2), flush=True)
        print("erasure with a fault after each 202", flush=True)
        results["erasure"] = erasure_phase(args, servers, key, ports)
        print(json.dumps(results["erasure"], indent=2), flush=True)
        print("overload: one connection, 200 clients", flush=True)
        results["overload"] = overload_phase(args, servers, key, args.http_port + 2)
        print(json.dumps(results["overload"], indent=2), flush=True)
    finally:
        servers.stop_all()
        with open(args.results, "w") as handle:
            json.dump(results, handle, indent=2, sort_keys=True)
    failures = []
    ingest, coherence, erasure, overload = results["ingest"], results["coherence"], results["erasure"], results["overload"]
    if ingest["lost"]:
        failures.append(f"{ingest['lost']} acknowledged events lost")
    if ingest["storedNotSent"]:
        failures.append(f"{ingest['storedNotSent']} stored events nobody sent")
    if ingest["http500"] or erasure["http500"] or any(key.startswith("HTTP 500") for key in overload["answers"]):
        failures.append("HTTP 500 seen")
    if ingest["neverAcknowledged"]:
        failures.append(f"{ingest['neverAcknowledged']} events never acknowledged after the faults")
    if coherence["neverConverged"] or (coherence["p99ms"] or 0) > 1000:
        failures.append(f"coherence p99 {coherence['p99ms']} ms, {coherence['neverConverged']} never converged")
    if erasure["neverAccepted"] or erasure["notDone"]:
        failures.append(f"{erasure['neverAccepted']} erasures never accepted, {erasure['notDone']} never done")
    if erasure["survived"] or erasure["halfStreams"]:
        failures.append(f"{erasure['survived']} rows of erased persons survived, {erasure['halfStreams']} half streams")
    if erasure["recordMismatches"]:
        failures.append(f"{erasure['recordMismatches']} erasure records with wrong counts")
    if erasure["bystandersLost"]:
        failures.append(f"{erasure['bystandersLost']} acknowledged bystander events lost during erasures")
    print(f"{ingest['acknowledged']} acknowledged, {ingest['lost']} lost; faults {ingest['faults']}; "
          f"convergence p50 {coherence['p50ms']:.1f} ms p99 {coherence['p99ms']:.1f} ms; "
          f"overload p99 {overload['p99ms']:.0f} ms {overload['answers']}", flush=True)
    done = sum(1 for entry in erasure["erasures"] if entry.get("done"))
    print(f"{done}/{len(erasure['erasures'])} erasures done, 202 to done p50 {erasure['secondsToDoneP50']} s "
          f"max {erasure['secondsToDoneMax']} s; faults {erasure['faults']}; {erasure['survived']} erased rows survived, "
          f"{erasure['halfStreams']} half streams", flush=True)
    if failures:
        print("FAILED: " + "; ".join(failures), flush=True)
        raise SystemExit(1)


if __name__ == "__main__":
    main()
