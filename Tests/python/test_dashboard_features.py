"""The dashboard's feature editor and kill switches (SPEC §15) in a real browser: Playwright
driving Debian's headless Chromium against a live locgate server that Deploy/e2e starts. A
feature is edited, its preview read (and checked against the devices), saved, then switched off
and on again from the features page; a read key's session and a foreign Origin change nothing.
Screenshots go to LOCGATE_SCREENSHOTS (Deploy/e2e: .dashboard/).
"""
import json
import os
import re
import urllib.error
import urllib.request
import uuid
from datetime import datetime, timedelta, timezone

import pytest

playwright = pytest.importorskip("playwright.sync_api")

URL = os.environ["LOCGATE_E2E_URL"]
TOKEN = os.environ["LOCGATE_E2E_ADMIN_TOKEN"]
CHROMIUM = os.environ.get("LOCGATE_CHROMIUM", "/usr/bin/chromium")
SHOTS = os.environ.get("LOCGATE_SCREENSHOTS", os.path.join(os.environ.get("LOCGATE_ROOT", "."), ".dashboard"))


def call(method, path, key, body=None):
    request = urllib.request.Request(
        URL + path, method=method, data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read() or b"{}")


def event(user, device, type_, data):
    occurred = (datetime.now(timezone.utc) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"id": str(uuid.uuid4()), "userId": user, "deviceId": device, "occurredAt": occurred, "type": type_, "data": data}


# The population: (user, device, platform, appVersion). With `minAppVersion` 5.2 the three iOS
# devices on 5.1 and the two Android devices on 4.0 turn off (5 devices); the others stay on.
DEVICES = [(f"old-{i}", "phone", "iOS", "5.1") for i in range(3)] + \
          [(f"new-{i}", "phone", "iOS", "6.0") for i in range(3)] + \
          [(f"droid-{i}", "pixel", "android", "4.0") for i in range(2)]


@pytest.fixture(scope="module")
def app():
    created = call("POST", "/v1/apps", TOKEN, {"name": "feature-editor"})
    key = created["apiKey"]
    call("PUT", "/v1/features/nearby", key, {"requires": "whenInUse", "description": "Places near you"})
    call("PUT", "/v1/features/trip-log", key, {"requires": "always", "services": ["visits"]})
    events = []
    for user, device, platform, version in DEVICES:
        if platform == "android":
            events.append(event(user, device, "contextReported",
                                {"platform": "android", "apiLevel": 34, "targetSdk": 34, "appVersion": version}))
            events.append(event(user, device, "permissionsObserved", {"granted": ["coarse", "fine"], "locationEnabled": True}))
        else:
            events.append(event(user, device, "contextReported", {"platform": platform, "osVersion": "17.4", "appVersion": version}))
            events.append(event(user, device, "settingsChanged", {"authorization": "whileUsing"}))
    call("POST", "/v1/events", key, {"events": events})
    read = call("POST", "/v1/keys", key, {"scope": "read"})["key"]
    return key, read


@pytest.fixture(scope="module")
def browser():
    with playwright.sync_playwright() as driver:
        instance = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield instance
        instance.close()


def sign_in(browser, key, width=1200):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    requests, dialogs = [], []
    page.on("request", lambda request: requests.append(request.url))
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(URL + "/dashboard/signin")
    page.fill("input[name=key]", key)
    page.click("button[type=submit]")
    page.wait_for_url(URL + "/dashboard")
    return context, page, requests, dialogs


def table(page, id_):
    """The table's rows as lists of (text, data-value)."""
    return page.eval_on_selector_all(
        f"table#{id_} tbody tr",
        "rows => rows.map(r => Array.from(r.cells).map(c => [c.textContent, c.getAttribute('data-value')]))")


def headers(page, id_):
    return page.eval_on_selector_all(f"table#{id_} thead th", "cells => cells.map(c => c.textContent)")


def gate(key, user, device, feature="nearby"):
    return call("GET", f"/v1/users/{user}/devices/{device}/gates/{feature}", key)


def switch_state(page, feature):
    return page.inner_text(f"#switches li[data-feature='{feature}'] .state")


def test_edit_preview_save_and_kill_switch(app, browser):
    key, _ = app
    context, page, requests, dialogs = sign_in(browser, key)
    os.makedirs(SHOTS, exist_ok=True)

    # The features page: each feature's state and its editor.
    page.goto(URL + "/dashboard/features")
    assert switch_state(page, "nearby") == "on"
    page.click("#switches li[data-feature='nearby'] a")
    page.wait_for_url(URL + "/dashboard/features/nearby")
    assert page.input_value("input[name=description]") == "Places near you"
    assert page.input_value("input[name=minAppVersion]") == ""
    assert page.eval_on_selector("select[name=requires]", "s => s.value") == "whenInUse"

    # Edit: a version floor and full accuracy off; Preview reads, stores nothing.
    page.fill("input[name=minAppVersion]", "5.2")
    page.click("#preview")
    page.wait_for_url(re.compile(r".*/dashboard/features/nearby\?.*preview=1.*"))
    assert page.query_selector("#error") is None, page.inner_text("#error")
    names = headers(page, "preview")
    rows = [dict(zip(names, cells)) for cells in table(page, "preview")]
    assert len(rows) == 1, rows
    assert rows[0]["from"][0] == "on" and rows[0]["to"][0] == "off (appVersionTooOld)"
    assert int(rows[0]["devices"][1]) == 5
    assert rows[0]["byPlatform"][0] == "android 2, iOS 3"
    sampled = set(rows[0]["sample"][0].split(", "))
    assert sampled == {"old-0/phone", "old-1/phone", "old-2/phone", "droid-0/pixel", "droid-1/pixel"}
    assert page.input_value("input[name=minAppVersion]") == "5.2", "the form keeps what was entered"
    page.screenshot(path=os.path.join(SHOTS, "feature-preview.png"), full_page=True)
    assert call("GET", "/v1/features/nearby", key)["minAppVersion"] is None, "a preview stores nothing"
    assert gate(key, "old-0", "phone")["enabled"] is True

    # A bad floor is refused with the API's message, nothing stored.
    page.fill("input[name=minAppVersion]", "5.x")
    page.click("#preview")
    page.wait_for_selector("#error")
    assert "minAppVersion" in page.inner_text("#error")
    page.fill("input[name=minAppVersion]", "5.2")

    # Save: stored, and the gates follow.
    page.click("#save")
    page.wait_for_url(URL + "/dashboard/features/nearby?saved=1")
    assert page.inner_text("#saved") == "Saved."
    assert page.input_value("input[name=minAppVersion]") == "5.2"
    stored = call("GET", "/v1/features/nearby", key)
    assert stored["minAppVersion"] == "5.2" and stored["description"] == "Places near you" and stored["disabled"] is False
    assert gate(key, "old-0", "phone")["reason"] == "appVersionTooOld"
    assert gate(key, "new-0", "phone")["enabled"] is True

    # The same definition previews as no change.
    page.click("#preview")
    page.wait_for_selector("#unchanged")

    # The kill switch, one click away on the features page.
    page.goto(URL + "/dashboard/features")
    with page.expect_navigation():
        page.click("#switches li[data-feature='nearby'] button")
    assert page.url == URL + "/dashboard/features"
    assert switch_state(page, "nearby") == "disabled"
    assert switch_state(page, "trip-log") == "on"
    assert call("GET", "/v1/features/nearby", key)["disabled"] is True
    assert call("GET", "/v1/features/nearby", key)["minAppVersion"] == "5.2", "the switch changes nothing else"
    decision = gate(key, "new-0", "phone")
    assert decision["enabled"] is False and decision["reason"] == "disabledByOperator" and decision["action"] == "none"
    assert decision["status"] == "authorizedWhenInUse"
    columns = headers(page, "features")
    features = {cells[0][0]: dict(zip(columns, cells)) for cells in table(page, "features")}
    assert features["nearby"]["switch"][0] == "disabled" and features["nearby"]["minAppVersion"][0] == "5.2"
    assert features["trip-log"]["switch"][0] == "on"
    # The chart of decisions says the same: every device off by the operator's switch.
    decisions = page.get_attribute("section:has(table#features) svg[role=img]", "aria-label")
    assert f"nearby: enabled 0, disabledByOperator {len(DEVICES)}" in decisions, decisions
    page.screenshot(path=os.path.join(SHOTS, "features-kill-switch.png"), full_page=True)
    with page.expect_navigation():
        page.click("#switches li[data-feature='nearby'] button")
    assert switch_state(page, "nearby") == "on"
    assert call("GET", "/v1/features/nearby", key)["disabled"] is False
    assert gate(key, "new-0", "phone")["enabled"] is True

    # A new feature from the features page: an empty editor for the key, previewed against no feature.
    page.fill("input[name=key]", "geofence")
    page.click("form[action='/dashboard/feature'] button")
    page.wait_for_url(URL + "/dashboard/features/geofence")
    page.check("input[name='services.regionMonitoring']")
    page.click("#preview")
    page.wait_for_url(re.compile(r".*/dashboard/features/geofence\?.*"))
    previewed = [dict(zip(headers(page, "preview"), cells)) for cells in table(page, "preview")]
    assert previewed and all(row["from"][0] == "off (unknownFeature)" for row in previewed)
    assert sum(int(row["devices"][1]) for row in previewed) == len(DEVICES)
    with pytest.raises(urllib.error.HTTPError):
        call("GET", "/v1/features/geofence", key)

    assert all(url.startswith(URL) for url in requests), [url for url in requests if not url.startswith(URL)]
    assert dialogs == []
    context.close()


def test_only_an_admin_session_from_the_own_origin_changes_features(app, browser):
    key, read = app
    # A read key's session sees the states, but no switch and no editor.
    context, page, _, _ = sign_in(browser, read)
    page.goto(URL + "/dashboard/features")
    assert switch_state(page, "nearby") in ("on", "disabled")
    assert page.query_selector("#switches form") is None
    assert page.query_selector("#switches a") is None
    response = page.goto(URL + "/dashboard/features/nearby")
    assert response.status == 403
    posted = context.request.post(URL + "/dashboard/features/nearby/switch", form={"disabled": "true"},
                                  headers={"Origin": URL}, max_redirects=0)
    assert posted.status == 403
    context.close()
    assert call("GET", "/v1/features/nearby", key)["disabled"] is False

    # An admin key's session, but another site's Origin (or none): refused, nothing stored.
    context, page, _, _ = sign_in(browser, key)
    for origin in ["http://evil.example", None]:
        extra = {"Origin": origin} if origin else {}
        posted = context.request.post(URL + "/dashboard/features/nearby/switch", form={"disabled": "true"},
                                      headers=extra, max_redirects=0)
        assert posted.status == 403, origin
        saved = context.request.post(URL + "/dashboard/features/nearby", form={"requires": "always"},
                                     headers=extra, max_redirects=0)
        assert saved.status == 403, origin
    stored = call("GET", "/v1/features/nearby", key)
    assert stored["disabled"] is False and stored["requires"] == "whenInUse"
    # The own Origin: accepted (303 back to the features page).
    posted = context.request.post(URL + "/dashboard/features/nearby/switch", form={"disabled": "true"},
                                  headers={"Origin": URL}, max_redirects=0)
    assert posted.status == 303 and posted.headers["location"] == "/dashboard/features"
    assert call("GET", "/v1/features/nearby", key)["disabled"] is True
    posted = context.request.post(URL + "/dashboard/features/nearby/switch", form={"disabled": "false"},
                                  headers={"Origin": URL}, max_redirects=0)
    assert posted.status == 303
    context.close()


def test_the_editor_fits_a_360_px_window(app, browser):
    key, _ = app
    context, page, _, _ = sign_in(browser, key, width=360)
    for path in ["/dashboard/features", "/dashboard/features/nearby", "/dashboard/features/nearby?preview=1&requires=always"]:
        page.goto(URL + path)
        overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, f"{path} scrolls {overflow} px sideways at 360 px"
    context.close()
