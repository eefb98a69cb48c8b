"""The stock OpenFeature Python SDK with the OFREP provider against a live locgate server.

Deploy/e2e starts the server and passes its URL and an admin key in the environment.
"""
import json
import os
import urllib.request
import uuid

import pytest
from openfeature import api
from openfeature.contrib.provider.ofrep import OFREPProvider
from openfeature.evaluation_context import EvaluationContext
from openfeature.exception import ErrorCode
from openfeature.flag_evaluation import Reason

URL = os.environ["LOCGATE_E2E_URL"]
KEY = os.environ["LOCGATE_E2E_KEY"]


def call(method, path, body=None):
    request = urllib.request.Request(
        URL + path, method=method, data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read() or b"{}")


def event(user, device, type_, data):
    return {"id": str(uuid.uuid4()), "userId": user, "deviceId": device,
            "occurredAt": "2026-11-22T10:00:00Z", "type": type_, "data": data}


@pytest.fixture(scope="module")
def client():
    call("PUT", "/v1/features/arrival-lights", {"requires": "always", "services": ["regionMonitoring"]})
    call("PUT", "/v1/features/nearby", {"requires": "whenInUse"})
    call("POST", "/v1/events", {"events": [
        event("py-user", "phone", "authorizationRequested", {"request": "whenInUse"}),
        event("py-user", "phone", "promptResponded", {"choice": "allowWhileUsing"}),
    ]})
    api.set_provider(OFREPProvider(URL, headers_factory=lambda: {"Authorization": f"Bearer {KEY}"}))
    return api.get_client()


def test_enabled_flag_for_a_device(client):
    details = client.get_boolean_details("nearby", False, EvaluationContext("py-user", {"deviceId": "phone"}))
    assert details.value is True
    assert details.variant == "enabled"
    assert details.reason == Reason.TARGETING_MATCH
    assert details.flag_metadata["status"] == "authorizedWhenInUse"


def test_disabled_flag_says_what_to_do(client):
    details = client.get_boolean_details("arrival-lights", True, EvaluationContext("py-user", {"deviceId": "phone"}))
    assert details.value is False
    assert details.variant == "disabled"
    assert details.flag_metadata["reason"] == "needsAlways"
    assert details.flag_metadata["action"] == "requestAlways"


def test_user_level_without_device(client):
    assert client.get_boolean_value("nearby", False, EvaluationContext("py-user")) is True
    assert client.get_boolean_value("nearby", True, EvaluationContext("nobody-here")) is False


def test_unknown_flag_returns_the_default(client):
    details = client.get_boolean_details("no-such-flag", True, EvaluationContext("py-user"))
    assert details.value is True
    assert details.error_code == ErrorCode.FLAG_NOT_FOUND
