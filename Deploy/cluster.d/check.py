"""The fault checks of Deploy/cluster --check, against the running cluster (Patroni, HAProxy,
three servers). Standard library only; every loop is bounded in count and time. Prints each
check's figures and writes them all to .cluster/results.json; exits 1 when an acknowledged
event is lost, a 500 is seen, a standby read misses what it must see, or verify is not clean.

Checks:
  failover   single-event appends from 8 clients through the balancer while the Patroni
             primary's node dies (kill -9 of Patroni and its PostgreSQL, as a machine loss): the
             leader key expires, the synchronous standby is promoted, HAProxy follows. Then every
             unacknowledged event is retried and the log read back: acknowledged, lost (must be
             0), seconds until the standby is promoted, the longest time without an acknowledged
             append, answers by code meanwhile. The dead node
             is started again and rejoins as a standby (pg_rewind).
  crash      the same ingest while only the primary's PostgreSQL is killed -9 (Patroni restarts
             it, crash recovery, no failover).
  replica    the same ingest while one `locgate serve` replica behind the balancer is killed -9:
             requests failed, seconds until the replica is back in the balancer.
  freshness  an append through one replica, the gate read through each other replica: p50/p99
             until the others answer with the new version.
  standby    reads that may lag: with Patroni in maintenance mode (else it resumes replay) and
             replay paused on both standbys, history through the read port does not show a new
             event while analytics (which wait 2 s for the standby, then read the primary)
             count it; after resume, history shows it.
  standbyDown  both standbys taken out of HAProxy's read port: history and analytics still
             answer 200, from the primary.
  verify     `locgate verify` (reads on the standby once it has caught up) is clean.
"""
import argparse
import http.client
import base64
import json
import os
import pwd
import signal
import subprocess
import sys
import threading
import time
import uuid

# Credentials come from Deploy/cluster through the environment: PGPASSWORD (the superuser, for
# psql), the service role's URLs for the servers, the owner's for verify, the admin token.
WRITE_URL = os.environ["LOCGATE_CLUSTER_WRITE_URL"]
READ_URL = os.environ["LOCGATE_CLUSTER_READ_URL"]
OWNER_URL = os.environ["LOCGATE_CLUSTER_OWNER_URL"]
OWNER_READ_URL = os.environ["LOCGATE_CLUSTER_OWNER_READ_URL"]
ADMIN_TOKEN = os.environ["LOCGATE_CLUSTER_ADMIN_TOKEN"]
# Patroni's REST API asks for basic authentication on the endpoints that change the cluster.
REST_AUTHORIZATION = "Basic " + base64.b64encode(os.environ["LOCGATE_CLUSTER_REST_AUTH"].encode()).decode()
# Servers run as this unprivileged user (when the checks run as root).
SERVER_USER = "locgate"

BALANCER = 21080
SERVERS = [21081, 21082, 21083]
REST = [21008, 21009, 21010]
PG = [21432, 21433, 21434]

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from loadclient import classify, event, percentile, request  # noqa: E402


# What psql prints when the connection, not the statement, failed: HAProxy shut the session
# (its health check missed a slow Patroni for a moment) or the node is restarting.
CONNECTION_FAILURES = ("server closed the connection", "could not connect", "Connection refused",
                       "the database system is starting up", "terminating connection")


def psql(port, sql, database="locgate", seconds=30):
    """Runs one idempotent statement, again while the connection fails, for at most `seconds`."""
    command = ["psql", "-X", "-At", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-d", database, "-c", sql]
    deadline = time.monotonic() + seconds
    while True:
        run = subprocess.run(command, capture_output=True, text=True, timeout=max(1, min(30, seconds)))
        if run.returncode == 0:
            return run.stdout.strip()
        if time.monotonic() > deadline or not any(text in run.stderr for text in CONNECTION_FAILURES):
            raise subprocess.CalledProcessError(run.returncode, command, run.stdout, run.stderr)
        time.sleep(0.2)


def members():
    for port in REST:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection.request("GET", "/cluster")
            return json.loads(connection.getresponse().read())["members"]
        except (OSError, ValueError, http.client.HTTPException):
            continue
    return []


def leader_index():
    for member in members():
        if member["role"] == "leader":
            return int(member["name"][2:]) - 1
    return None


def wait_healthy(seconds=120):
    """A leader and two streaming standbys, one synchronous."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        current = members()
        leaders = [m for m in current if m["role"] == "leader" and m["state"] == "running"]
        standbys = [m for m in current if m["role"] in ("replica", "sync_standby") and m["state"] in ("streaming", "running")]
        if len(leaders) == 1 and len(standbys) == 2 and any(m["role"] == "sync_standby" for m in current):
            # Patroni calls a replica "running" once it accepts connections, which a standby
            # replaying its own WAL does without a WAL receiver: the leader must see both stream.
            try:
                streaming = psql(PG[int(leaders[0]["name"][2:]) - 1],
                                 "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'",
                                 database="postgres", seconds=5)
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
                streaming = "0"
            if streaming == "2":
                return True
        time.sleep(0.5)
    return False


def pidfile(args, name):
    with open(os.path.join(args.dir, name)) as file:
        return int(file.read().strip())


def postmaster(args, index):
    with open(os.path.join(args.dir, f"pg{index + 1}", "data", "postmaster.pid")) as file:
        return int(file.readline().strip())


def start_patroni(args, index):
    config = os.path.join(args.dir, f"pg{index + 1}", "patroni.yml")
    log = open(os.path.join(args.dir, f"patroni-{index + 1}.log"), "ab")
    command = ["patroni", config]
    if os.geteuid() == 0:
        command = ["runuser", "-u", "postgres", "--"] + command
    # From the state directory (postgres owns it): Patroni's workers chdir to the directory
    # they inherit, and the clone may be one postgres cannot enter.
    # None of the checks' credentials (PG*, LOCGATE_CLUSTER_*): Patroni hands its environment to
    # PostgreSQL, and libpq prefers PGPASSWORD (the checks' superuser password) to
    # primary_conninfo's passfile, so a node started with it signs its WAL receiver in as
    # replicator with the wrong password.
    env = {key: value for key, value in os.environ.items() if not key.startswith(("LOCGATE_CLUSTER_", "PG"))}
    wrapper = subprocess.Popen(command, env=env, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                               start_new_session=True, cwd=args.dir)
    pid = wrapper.pid
    for _ in range(50):
        children = subprocess.run(["pgrep", "-P", str(wrapper.pid)], capture_output=True, text=True).stdout.split()
        if children:
            pid = int(children[0])
            break
        time.sleep(0.1)
    with open(os.path.join(args.dir, f"patroni-{index + 1}.pid"), "w") as file:
        file.write(str(pid))


def start_server(args, index):
    port = SERVERS[index]
    log = open(os.path.join(args.dir, f"server-{index + 1}.log"), "ab")
    # The servers' environment holds their own credentials and nothing of the checks' (no
    # PGPASSWORD, no owner URL).
    env = {key: value for key, value in os.environ.items() if not key.startswith(("LOCGATE_CLUSTER_", "PG"))}
    env.update(LOCGATE_DATABASE_URL=WRITE_URL, LOCGATE_READ_DATABASE_URL=READ_URL, LOCGATE_ADMIN_TOKEN=args.token)
    command = [args.bin, "serve", "--port", str(port), "--log-level", "warning"]
    if os.geteuid() == 0:
        # setpriv executes the server itself: the pid recorded is the server's.
        command = ["setpriv", f"--reuid={SERVER_USER}", f"--regid={SERVER_USER}", "--init-groups", "--"] + command
    process = subprocess.Popen(command, env=env, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                               start_new_session=True, cwd=args.dir)
    with open(os.path.join(args.dir, f"server-{index + 1}.pid"), "w") as file:
        file.write(str(process.pid))


class Ingest:
    """Single-event appends from `clients` threads through the balancer, each event tracked."""

    def __init__(self, key, tag, clients=8):
        self.key, self.tag, self.clients = key, tag, clients
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.sent, self.acknowledged, self.errors = {}, set(), {}
        self.timeline = []  # (time, ok)
        self.threads = [threading.Thread(target=self.client, args=(n,)) for n in range(clients)]

    def client(self, number):
        device, count = 0, 0
        while not self.stop.is_set():
            body = {"events": [event(f"{self.tag}{number}", f"d{device}", count)]}
            identifier = body["events"][0]["id"]
            with self.lock:
                self.sent[identifier] = body
            try:
                status, answer = request("POST", BALANCER, "/v1/events", self.key, body, timeout=15)
                outcome = "ok" if status == 200 else classify(status, answer)
            except (OSError, http.client.HTTPException) as error:
                outcome = f"connection {type(error).__name__}"
            with self.lock:
                self.timeline.append((time.monotonic(), outcome == "ok"))
                if outcome == "ok":
                    self.acknowledged.add(identifier)
                else:
                    self.errors[outcome] = self.errors.get(outcome, 0) + 1
            count += 1
            if count % 20 == 0:
                device += 1
            if outcome != "ok":
                time.sleep(0.05)

    def start(self):
        for thread in self.threads:
            thread.start()

    def finish(self):
        self.stop.set()
        for thread in self.threads:
            thread.join()

    def outage_after(self, moment):
        """The longest time without an acknowledged append from the last one before `moment`:
        how long appends stopped succeeding around the fault."""
        with self.lock:
            successes = sorted(t for t, ok in self.timeline if ok)
        before = [t for t in successes if t < moment]
        after = [t for t in successes if t >= moment]
        if not after:
            return None
        marks = ([before[-1]] if before else [moment]) + after
        return round(max(b - a for a, b in zip(marks, marks[1:])) if len(marks) > 1 else 0.0, 2)

    def settle(self, args):
        """Retries every unacknowledged event, then reads the log back from the primary."""
        pending = [identifier for identifier in self.sent if identifier not in self.acknowledged]
        landed_before, stored_fresh, never = 0, 0, 0
        deadline = time.monotonic() + 120
        for identifier in pending:
            while True:
                try:
                    status, answer = request("POST", BALANCER, "/v1/events", self.key, self.sent[identifier])
                except (OSError, http.client.HTTPException):
                    status, answer = 0, {}
                if status == 200:
                    if answer["results"][0]["duplicate"]:
                        landed_before += 1
                    else:
                        stored_fresh += 1
                    break
                if time.monotonic() > deadline:
                    never += 1
                    break
                time.sleep(0.2)
        stored = set(psql(21000, f"SELECT event_id FROM events WHERE user_id LIKE '{self.tag}%'").split())
        lost = sum(1 for identifier in self.acknowledged if identifier not in stored)
        return {"sent": len(self.sent), "acknowledged": len(self.acknowledged), "lost": lost,
                "retried": len(pending), "retriedHadLanded": landed_before, "retriedStoredNow": stored_fresh,
                "neverStored": never, "errors": dict(sorted(self.errors.items())),
                "http500": sum(count for outcome, count in self.errors.items() if outcome.startswith("HTTP 500"))}


def failover_check(args, key):
    old = leader_index()
    ingest = Ingest(key, "fo")
    ingest.start()
    time.sleep(3)
    moment = time.monotonic()
    # The node dies: Patroni first (so it cannot restart PostgreSQL), then its PostgreSQL.
    os.kill(pidfile(args, f"patroni-{old + 1}.pid"), signal.SIGKILL)
    os.kill(postmaster(args, old), signal.SIGKILL)
    new = None
    while time.monotonic() - moment < 60:
        candidate = leader_index()
        if candidate is not None and candidate != old:
            new = candidate
            break
        time.sleep(0.2)
    promoted = round(time.monotonic() - moment, 2)
    time.sleep(3 if args.short else 8)
    ingest.finish()
    outage = ingest.outage_after(moment)
    result = ingest.settle(args)
    # The old primary comes back as a standby.
    start_patroni(args, old)
    rejoined = wait_healthy(180)
    result.update({"killedNode": f"pg{old + 1}", "newPrimary": f"pg{new + 1}" if new is not None else None,
                   "secondsUntilPromoted": promoted, "longestSecondsWithoutAnAppend": outage, "oldPrimaryRejoined": rejoined})
    return result


def crash_check(args, key):
    old = leader_index()
    ingest = Ingest(key, "cr")
    ingest.start()
    time.sleep(3)
    moment = time.monotonic()
    os.kill(postmaster(args, old), signal.SIGKILL)
    time.sleep(3 if args.short else 8)
    ingest.finish()
    outage = ingest.outage_after(moment)
    result = ingest.settle(args)
    healthy = wait_healthy(120)
    result.update({"killed": f"PostgreSQL of pg{old + 1}", "primaryAfter": f"pg{leader_index() + 1}" if leader_index() is not None else None,
                   "longestSecondsWithoutAnAppend": outage, "healthyAfter": healthy})
    return result


def replica_check(args, key):
    ingest = Ingest(key, "rp")
    ingest.start()
    time.sleep(2)
    moment = time.monotonic()
    os.kill(pidfile(args, "server-2.pid"), signal.SIGKILL)
    time.sleep(1)
    start_server(args, 1)
    back = None
    while time.monotonic() - moment < 60:
        try:
            if request("GET", SERVERS[1], "/readyz")[0] == 200:
                back = round(time.monotonic() - moment, 2)
                break
        except (OSError, http.client.HTTPException):
            pass
        time.sleep(0.05)
    time.sleep(2 if args.short else 5)
    ingest.finish()
    failed = sum(ingest.errors.values())
    result = ingest.settle(args)
    result.update({"killed": "server 2 (kill -9), restarted after 1 s", "requestsFailed": failed,
                   "secondsUntilReplicaReady": back})
    return result


def freshness_check(args, key):
    samples = 30 if args.short else 150
    latencies, stale = [], 0
    for index in range(samples):
        writer = index % 3
        readers = [port for n, port in enumerate(SERVERS) if n != writer]
        device = f"fresh-{index % 10}"
        for port in readers:
            request("GET", port, f"/v1/users/fresh/devices/{device}/gates", key)  # cached there
        status, answer = request("POST", SERVERS[writer], "/v1/events", key, {"events": [event("fresh", device, index)]})
        if status != 200:
            continue
        version = answer["results"][0]["version"]
        acknowledged = time.monotonic()
        for port in readers:
            while True:
                status, gate = request("GET", port, f"/v1/users/fresh/devices/{device}/gates", key)
                if status == 200 and gate.get("version", 0) >= version:
                    latencies.append((time.monotonic() - acknowledged) * 1000)
                    break
                if time.monotonic() - acknowledged > 5:
                    stale += 1
                    break
                time.sleep(0.002)
        time.sleep(0.02)
    return {"samples": len(latencies), "p50ms": percentile(latencies, 0.5), "p99ms": percentile(latencies, 0.99),
            "maxms": round(max(latencies), 2) if latencies else None, "neverFresh": stale}


def patroni_pause(paused):
    """Patroni's maintenance mode: while on, it leaves paused WAL replay alone (otherwise it
    resumes it within a loop)."""
    body = json.dumps({"pause": paused}).encode()
    statuses = []
    for port in REST:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("PATCH", "/config", body=body,
                               headers={"Content-Type": "application/json", "Authorization": REST_AUTHORIZATION})
            statuses.append(connection.getresponse().status)
            if statuses[-1] == 200:
                break
        except (OSError, http.client.HTTPException):
            continue
    if 200 not in statuses:
        raise RuntimeError(f"Patroni refused to change its configuration: {statuses}")
    time.sleep(2.5)  # every member's loop sees it


def fallbacks():
    total = 0
    for port in SERVERS:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/metrics")
            for line in connection.getresponse().read().decode().splitlines():
                if line.startswith("locgate_standby_read_fallbacks_total "):
                    total += int(float(line.split()[1]))
        except (OSError, http.client.HTTPException, ValueError):
            pass
    return total


def standby_check(args, key):
    standbys = [n for n in range(3) if n != leader_index()]
    before = fallbacks()
    patroni_pause(True)
    try:
        for n in standbys:
            psql(PG[n], "SELECT pg_wal_replay_pause()")
        status, answer = request("POST", BALANCER, "/v1/events", key, {"events": [
            {"id": str(uuid.uuid4()), "userId": "lag", "deviceId": "d", "occurredAt": "2026-11-22T10:00:00Z",
             "type": "authorizationRequested", "data": {"request": "whenInUse"}}]})
        assert status == 200, answer
        time.sleep(1)
        history_paused = request("GET", BALANCER, "/v1/users/lag/devices/d/history", key)[1].get("entries", [])
        started = time.monotonic()
        status, analytics = request("GET", BALANCER, "/v1/analytics/prompts", key, timeout=30)
        analytics_seconds = round(time.monotonic() - started, 2)
        shown = sum(row.get("shown", 0) for row in analytics.get("rows", []))
        replay_paused = all(psql(PG[n], "SELECT pg_is_wal_replay_paused()") == "t" for n in standbys)
    finally:
        for n in standbys:
            psql(PG[n], "SELECT pg_wal_replay_resume()")
        patroni_pause(False)
    history_after = []
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not history_after:
        history_after = request("GET", BALANCER, "/v1/users/lag/devices/d/history", key)[1].get("entries", [])
        time.sleep(0.1)
    fell_back = fallbacks() - before
    return {"replayPausedThroughout": replay_paused, "historyWhilePaused": len(history_paused),
            "historyAfterResume": len(history_after), "analyticsPromptsShown": shown,
            "analyticsSecondsWhilePaused": analytics_seconds, "analyticsReadThePrimary": fell_back,
            "ok": replay_paused and len(history_paused) == 0 and len(history_after) == 1 and shown >= 1 and fell_back >= 1}


def haproxy(args, command):
    import socket
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect(os.path.join(args.dir, "haproxy.sock"))
        connection.sendall(command.encode() + b"\n")
        return connection.recv(65536).decode()


def standby_down_check(args, key):
    """The read port with no server behind it (both standbys taken out of HAProxy): history and
    analytics still answer, from the primary."""
    before = fallbacks()
    for n in range(3):
        haproxy(args, f"disable server postgres-read/pg{n + 1}")
        haproxy(args, f"shutdown sessions server postgres-read/pg{n + 1}")
    try:
        request("POST", BALANCER, "/v1/events", key, {"events": [
            {"id": str(uuid.uuid4()), "userId": "down", "deviceId": "d", "occurredAt": "2026-11-22T10:00:00Z",
             "type": "authorizationRequested", "data": {"request": "whenInUse"}}]})
        answers = {}
        for _ in range(6):
            for path in ("/v1/users/down/devices/d/history", "/v1/analytics/prompts"):
                status, _ = request("GET", BALANCER, path, key, timeout=30)
                answers[f"{path.split('/')[-1]} {status}"] = answers.get(f"{path.split('/')[-1]} {status}", 0) + 1
    finally:
        for n in range(3):
            haproxy(args, f"enable server postgres-read/pg{n + 1}")
    fell_back = fallbacks() - before
    return {"answers": answers, "readsServedByThePrimary": fell_back,
            "ok": all(key.endswith(" 200") for key in answers) and fell_back >= 1}


def credentials_check(args):
    """Nothing of the cluster answers a local user without its credentials: Patroni's changing
    endpoints, etcd, PostgreSQL (through HAProxy and on a node, replication included); the
    servers run as the unprivileged user; the state folder and its secrets are private."""
    rest = []
    for port in REST:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        connection.request("PATCH", "/config", body=b'{"synchronous_mode": false}', headers={"Content-Type": "application/json"})
        rest.append(connection.getresponse().status)
    connection = http.client.HTTPConnection("127.0.0.1", 21379, timeout=5)
    connection.request("POST", "/v3/kv/range", body=json.dumps({"key": base64.b64encode(b"/locgate/").decode()}).encode())
    etcd_answer = json.loads(connection.getresponse().read() or b"{}")
    env = {key: value for key, value in os.environ.items() if not key.startswith("PG")}

    def refused(conninfo):
        run = subprocess.run(["psql", "-X", "-w", "-At", conninfo, "-c", "SELECT 1"], env=env, capture_output=True, text=True, timeout=30)
        return run.returncode != 0
    database = {
        "superuserThroughHAProxy": refused("host=127.0.0.1 port=21000 user=postgres dbname=postgres"),
        "serviceRoleThroughHAProxy": refused("host=127.0.0.1 port=21000 user=locgate_app dbname=locgate"),
        "replicationOnANode": refused(f"host=127.0.0.1 port={PG[0]} user=replicator dbname=postgres replication=true"),
    }
    users = []
    for n in range(3):
        with open(f"/proc/{pidfile(args, f'server-{n + 1}.pid')}/status") as file:
            uid = next(int(line.split()[1]) for line in file if line.startswith("Uid:"))
        users.append(pwd.getpwuid(uid).pw_name)
    modes = {"stateFolder": oct(os.stat(args.dir).st_mode & 0o777),
             "secrets": oct(os.stat(os.path.join(args.dir, "secrets")).st_mode & 0o777)}
    ok = (all(status == 401 for status in rest) and "error" in etcd_answer and all(database.values())
          and all(user == SERVER_USER for user in users) and modes == {"stateFolder": "0o711", "secrets": "0o700"})
    return {"patroniWithoutAuth": rest, "etcdWithoutAuth": etcd_answer.get("error", "answered"),
            "databaseRefusedWithoutPassword": database, "serverUsers": users, "modes": modes, "ok": ok}


def verify_check(args):
    env = dict(os.environ, LOCGATE_DATABASE_URL=OWNER_URL, LOCGATE_READ_DATABASE_URL=OWNER_READ_URL)
    started = time.monotonic()
    run = subprocess.run([args.bin, "verify", "--log-level", "warning"], env=env, capture_output=True, text=True, timeout=600)
    return {"exit": run.returncode, "output": run.stdout.strip().splitlines()[-1:] if run.stdout else run.stderr.strip()[-300:],
            "seconds": round(time.monotonic() - started, 2)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True)
    parser.add_argument("--bin", required=True)
    parser.add_argument("--bindir", required=True)
    parser.add_argument("--short", action="store_true")
    parser.set_defaults(token=ADMIN_TOKEN)
    args = parser.parse_args()

    for _ in range(50):
        status, app = request("POST", BALANCER, "/v1/apps", args.token, {"name": f"cluster-{uuid.uuid4().hex[:6]}"})
        if status == 201:
            break
        time.sleep(0.2)
    assert status == 201, (status, app)
    key = app["apiKey"]
    status, _ = request("PUT", BALANCER, "/v1/features/nearby", key, {"requires": "whenInUse"})
    assert status in (200, 201), status

    results = {}
    checks = [("credentials", lambda: credentials_check(args)),
              ("freshness", lambda: freshness_check(args, key)),
              ("replica", lambda: replica_check(args, key)),
              ("crash", lambda: crash_check(args, key)),
              ("failover", lambda: failover_check(args, key)),
              ("standby", lambda: standby_check(args, key)),
              ("standbyDown", lambda: standby_down_check(args, key)),
              ("verify", lambda: verify_check(args))]
    for name, check in checks:
        print(f"[cluster] check: {name}", flush=True)
        results[name] = check()
        print(json.dumps(results[name], indent=1), flush=True)

    failures = []
    for name in ("replica", "crash", "failover"):
        if results[name]["lost"] or results[name]["http500"] or results[name]["neverStored"]:
            failures.append(f"{name}: lost {results[name]['lost']}, 500s {results[name]['http500']}, never stored {results[name]['neverStored']}")
    if not results["failover"]["oldPrimaryRejoined"] or results["failover"]["newPrimary"] is None:
        failures.append("failover: no new primary, or the old one did not rejoin")
    if results["freshness"]["neverFresh"]:
        failures.append("freshness: a replica kept an old gate for 5 s")
    if not results["standby"]["ok"]:
        failures.append("standby: paused standbys were read for history, or analytics missed the append")
    if not results["standbyDown"]["ok"]:
        failures.append("standbyDown: a read failed with the standbys out of the balancer")
    if not results["credentials"]["ok"]:
        failures.append("credentials: something answered without its credentials, or a server runs as another user")
    if results["verify"]["exit"] != 0:
        failures.append("verify is not clean")
    out = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), ".cluster")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "results.json"), "w") as file:
        json.dump(results, file, indent=1)
    for failure in failures:
        print(f"[cluster] FAILED {failure}", flush=True)
    print("[cluster] checks " + ("failed" if failures else "passed"), flush=True)
    raise SystemExit(1 if failures else 0)


if __name__ == "__main__":
    main()
