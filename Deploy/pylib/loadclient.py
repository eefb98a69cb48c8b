"""What the fault scripts (Deploy/faults.d, Deploy/cluster.d) share: a one-shot HTTP request to
a server on 127.0.0.1, an answer's class for counting, a single event, and a percentile.
Standard library only."""
import http.client
import json
import uuid


def request(method, port, path, key=None, body=None, raw=None, timeout=10):
    """(status, parsed JSON body or {}); `raw` sends bytes as they are instead of `body`."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        connection.request(method, path, body=data, headers=headers)
        response = connection.getresponse()
        text = response.read()
        try:
            parsed = json.loads(text) if text else {}
        except ValueError:
            parsed = {}
        return response.status, parsed
    finally:
        connection.close()


def classify(status, body):
    """`HTTP 503 databaseUnavailable`: the status and the error code of an answer."""
    code = body.get("error", {}).get("code") if isinstance(body, dict) else None
    return f"HTTP {status} {code or ''}".strip()


def event(user, device, index):
    """A new event of one device: the app came to the foreground or left it."""
    return {"id": str(uuid.uuid4()), "userId": user, "deviceId": device, "occurredAt": "2026-11-22T10:00:00Z",
            "type": "appStateChanged", "data": {"state": "foreground" if index % 2 == 0 else "background"}}


def percentile(values, fraction):
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, max(0, int(round(fraction * len(ordered))) - 1))], 2) if ordered else None
