"""The Python example of docs/api.md ("OpenFeature SDKs") is docs/examples/ofrep_flags.py,
verbatim, and it works: run here against the live server Deploy/e2e starts, with the stock
OpenFeature Python SDK and its OFREP provider, so the documentation and the product cannot
drift apart.
"""
import importlib.util
import json
import os
import re
import urllib.request
import uuid

ROOT = os.environ.get("LOCGATE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLE = os.path.join(ROOT, "docs", "examples", "ofrep_flags.py")
MARKER = "<!-- docs/examples/ofrep_flags.py -->"


def read(path):
    with open(path) as handle:
        return handle.read()


def test_the_api_page_shows_the_example_file_verbatim():
    page = read(os.path.join(ROOT, "docs", "api.md"))
    assert page.count(MARKER) == 1, "docs/api.md has the example's marker once"
    block = re.search(re.escape(MARKER) + r"\n```python\n(.*?)```\n", page, re.S)
    assert block, "the marker is followed by a python block"
    assert block.group(1) == read(EXAMPLE), "docs/api.md's Python example differs from docs/examples/ofrep_flags.py"


def load_example():
    spec = importlib.util.spec_from_file_location("ofrep_flags", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def call(method, path, key, body=None):
    url = os.environ["LOCGATE_E2E_URL"]
    request = urllib.request.Request(
        url + path, method=method, data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read() or b"{}")


def event(type_, data):
    return {"id": str(uuid.uuid4()), "userId": "doc-user", "deviceId": "phone", "occurredAt": "2026-11-22T10:00:00Z",
            "type": type_, "data": data}


def test_the_example_evaluates_flags_and_follows_the_change_feed():
    url, token = os.environ["LOCGATE_E2E_URL"], os.environ["LOCGATE_E2E_ADMIN_TOKEN"]
    admin = call("POST", "/v1/apps", token, {"name": "docs example"})["apiKey"]
    read_key = call("POST", "/v1/keys", admin, {"scope": "read"})["key"]
    call("PUT", "/v1/features/nearby", admin, {"requires": "whenInUse"})
    call("PUT", "/v1/features/arrival-lights", admin, {"requires": "always", "services": ["regionMonitoring"]})
    call("POST", "/v1/events", admin, {"events": [
        event("authorizationRequested", {"request": "whenInUse"}),
        event("promptResponded", {"choice": "allowWhileUsing"}),
    ]})
    example = load_example()

    client = example.gate_client(url, read_key)
    assert example.feature_gate(client, "doc-user", "phone", "nearby") == (True, "none", "authorized")
    assert example.feature_gate(client, "doc-user", "phone", "arrival-lights") == (False, "requestAlways", "needsAlways")

    feed = example.changes(url, read_key)
    try:
        first = [next(feed) for _ in range(2)]
    finally:
        feed.close()
    assert [message["version"] for _, message in first] == [1, 2]
    assert [message["status"] for _, message in first] == ["notDetermined", "authorizedWhenInUse"]
    assert all(message["accuracy"] == "full" and message["userId"] == "doc-user" for _, message in first)
    resumed = example.changes(url, read_key, last_event_id=first[0][0])
    try:
        assert next(resumed) == first[1]
    finally:
        resumed.close()
