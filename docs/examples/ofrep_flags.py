"""LocationGate from Python: features as OpenFeature flags through OFREP, and the change feed.

pip install openfeature-sdk openfeature-provider-ofrep
The key has scope `read`: it belongs on your servers, never in an app.
"""
import json
import urllib.request

from openfeature import api
from openfeature.contrib.provider.ofrep import OFREPProvider
from openfeature.evaluation_context import EvaluationContext


def gate_client(base_url, read_key):
    """An OpenFeature client whose flags are the app's features (OFREP at base_url)."""
    api.set_provider(OFREPProvider(base_url, headers_factory=lambda: {"X-API-Key": read_key}))
    return api.get_client()


def feature_gate(client, user_id, device_id, feature):
    """(enabled, action, reason): whether the device may use the feature, and what to do if not."""
    details = client.get_boolean_details(feature, False, EvaluationContext(user_id, {"deviceId": device_id}))
    return details.value, details.flag_metadata.get("action"), details.flag_metadata.get("reason")


def changes(base_url, read_key, last_event_id=None, timeout=30):
    """The app's change feed: (id, message) for each committed event, in the log's order.

    From the beginning, or right after last_event_id (the id of the last message handled).
    A message is {"userId", "deviceId", "version", "status", "accuracy"}.
    """
    headers = {"Authorization": f"Bearer {read_key}", "Accept": "text/event-stream"}
    if last_event_id:
        headers["Last-Event-ID"] = last_event_id
    path = "/v1/changes" if last_event_id else "/v1/changes?from=start"
    request = urllib.request.Request(base_url + path, headers=headers)
    with urllib.request.urlopen(request, timeout=timeout) as stream:
        event_id, data = None, None
        for raw in stream:
            line = raw.decode("utf-8").rstrip("\r\n")
            if line.startswith("id: "):
                event_id = line[4:]
            elif line.startswith("data: "):
                data = json.loads(line[6:])
            elif line == "" and data is not None:
                yield event_id, data
                event_id, data = None, None
