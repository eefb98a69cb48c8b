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
  overload a server with one database connection under 200 concurrent cache-missing gate
           reads: answers by code and latency.
"""
import argparse
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
        print("overload: one connection, 200 clients", flush=True)
        results["overload"] = overload_phase(args, servers, key, args.http_port + 2)
        print(json.dumps(results["overload"], indent=2), flush=True)
    finally:
        servers.stop_all()
        with open(args.results, "w") as handle:
            json.dump(results, handle, indent=2, sort_keys=True)
    failures = []
    ingest, coherence, overload = results["ingest"], results["coherence"], results["overload"]
    if ingest["lost"]:
        failures.append(f"{ingest['lost']} acknowledged events lost")
    if ingest["storedNotSent"]:
        failures.append(f"{ingest['storedNotSent']} stored events nobody sent")
    if ingest["http500"] or any(key.startswith("HTTP 500") for key in overload["answers"]):
        failures.append("HTTP 500 seen")
    if ingest["neverAcknowledged"]:
        failures.append(f"{ingest['neverAcknowledged']} events never acknowledged after the faults")
    if coherence["neverConverged"] or (coherence["p99ms"] or 0) > 1000:
        failures.append(f"coherence p99 {coherence['p99ms']} ms, {coherence['neverConverged']} never converged")
    print(f"{ingest['acknowledged']} acknowledged, {ingest['lost']} lost; faults {ingest['faults']}; "
          f"convergence p50 {coherence['p50ms']:.1f} ms p99 {coherence['p99ms']:.1f} ms; "
          f"overload p99 {overload['p99ms']:.0f} ms {overload['answers']}", flush=True)
    if failures:
        print("FAILED: " + "; ".join(failures), flush=True)
        raise SystemExit(1)


if __name__ == "__main__":
    main()
