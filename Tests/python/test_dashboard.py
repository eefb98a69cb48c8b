"""The dashboard (SPEC §8) in a real browser: Playwright driving Debian's headless Chromium
against a live locgate server that Deploy/e2e starts, the Experiments pages (SPEC §16) among them. Screenshots go to LOCGATE_SCREENSHOTS
(Deploy/e2e: .dashboard/; docs/screenshots/ holds a committed set), at 1200 px, and at 1280 px
and 360 px by the test of the boxes.
"""
import json
import os
import re
import urllib.request
import uuid

import pytest

playwright = pytest.importorskip("playwright.sync_api")

URL = os.environ["LOCGATE_E2E_URL"]
TOKEN = os.environ["LOCGATE_E2E_ADMIN_TOKEN"]
CHROMIUM = os.environ.get("LOCGATE_CHROMIUM", "/usr/bin/chromium")
SHOTS = os.environ.get("LOCGATE_SCREENSHOTS", os.path.join(os.environ.get("LOCGATE_ROOT", "."), ".dashboard"))
HOSTILE = "<script>alert(1)</script>"


def call(method, path, key, body=None):
    request = urllib.request.Request(
        URL + path, method=method, data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read() or b"{}")


def event(user, device, type_, data, day="2026-11-20", minute=0):
    return {"id": str(uuid.uuid4()), "userId": user, "deviceId": device,
            "occurredAt": f"{day}T10:{minute:02d}:00Z", "type": type_, "data": data}


# A prompt experiment of the population (SPEC §16): every device is evaluated, so exposed,
# before its events arrive, so that its When In Use answers count.
EXPERIMENT = "ask-early"


@pytest.fixture(scope="module")
def population():
    key = call("POST", "/v1/apps", TOKEN, {"name": "dashboard"})["apiKey"]
    call("PUT", "/v1/features/nearby", key, {"requires": "whenInUse", "description": HOSTILE})
    call("PUT", "/v1/features/trip-log", key, {"requires": "always", "services": ["visits"]})
    call("PUT", f"/v1/experiments/{EXPERIMENT}", key, {
        "description": HOSTILE, "prompt": "whenInUse",
        "variants": [{"key": "dialog", "weight": 50}, {"key": "early", "weight": 50}], "control": "dialog"})
    flows = [
        [("authorizationRequested", {"request": "whenInUse"}), ("promptResponded", {"choice": "allowWhileUsing"}),
         ("authorizationRequested", {"request": "always"}), ("promptResponded", {"choice": "changeToAlwaysAllow"})],
        [("authorizationRequested", {"request": "always"}), ("statusObserved", {"status": "authorizedAlways"})],
        [("authorizationRequested", {"request": "whenInUse"}), ("promptResponded", {"choice": "dontAllow"}),
         ("settingsChanged", {"authorization": "whileUsing"})],
        [("authorizationRequested", {"request": "whenInUse"}), ("statusObserved", {"status": "authorizedWhenInUse"}),
         ("appStateChanged", {"state": "background"}), ("statusObserved", {"status": "notDetermined"})],
    ]
    for index in range(24):
        day = f"2026-11-{18 + index % 4}"
        version = HOSTILE if index % 5 == 0 else f"4.{index % 3}"
        platform = "macOS" if index % 4 == 2 else ["iOS", "iPadOS"][index % 2]
        events = [event(f"user-{index}", "phone", "contextReported",
                        {"platform": platform, "osVersion": "17.4", "appVersion": version,
                         "usageDescriptions": ["NSLocationWhenInUseUsageDescription", "NSLocationAlwaysAndWhenInUseUsageDescription"]},
                        day)]
        for minute, (type_, data) in enumerate(flows[index % len(flows)]):
            events.append(event(f"user-{index}", "phone", type_, data, day, minute + 1))
        call("GET", f"/v1/users/user-{index}/devices/phone/experiments/{EXPERIMENT}", key)
        call("POST", "/v1/events", key, {"events": events})
    other = call("POST", "/v1/apps", TOKEN, {"name": "other"})["apiKey"]
    return key, other


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
    page.goto(URL + "/dashboard")
    assert page.url.endswith("/dashboard/signin"), "nothing is visible without signing in"
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


def folded(page, id_):
    """Per row of the table, its folded counts (a prompt's choices) as {name: count}."""
    rows = page.eval_on_selector_all(
        f"table#{id_} tbody tr",
        "rows => rows.map(r => Array.from(r.querySelectorAll('span.part')).map(s => [s.dataset.name, s.dataset.value]))")
    return [{name: int(value) for name, value in row} for row in rows]


def chart_name(page, table_id):
    """The accessible name of the chart drawn above a table."""
    return page.get_attribute(f"section:has(table#{table_id}) svg[role=img]", "aria-label")


def figures(name):
    """A chart's accessible name, "Title. item: figures; item: figures", as {item: figures}."""
    _, _, body = name.partition(". ")
    return dict(part.partition(": ")[::2] for part in body.split("; "))


def counts(text):
    """ "name 1, name 2" as {name: 1, name: 2}."""
    return {match.group(1): int(match.group(2)) for match in re.finditer(r"(\w+) (\d+)", text)}


def percent(rate):
    """A rate as the dashboard writes it: "75.0%", or "none"."""
    return "none" if rate is None else f"{rate * 100:.1f}%"


PAGES = ["/dashboard", "/dashboard/prompts?groupBy=appVersion", "/dashboard/escalation", "/dashboard/settings",
         "/dashboard/features", "/dashboard/users/user-3/devices/phone", "/dashboard/activity",
         "/dashboard/experiments", f"/dashboard/experiments/{EXPERIMENT}"]
# Pages that are tables alone, without a chart.
TABLES_ONLY = ("/activity",)


def test_every_page_renders_signed_in_with_nothing_from_outside(population, browser):
    key, _ = population
    context, page, requests, dialogs = sign_in(browser, key)
    os.makedirs(SHOTS, exist_ok=True)
    for path in PAGES:
        response = page.goto(URL + path)
        assert response.status == 200, path
        assert page.query_selector("svg") is not None or any(part in path for part in TABLES_ONLY), f"{path} draws a chart"
        name = path.strip("/").split("?")[0].replace("/", "-") or "dashboard"
        page.screenshot(path=os.path.join(SHOTS, f"{name}.png"), full_page=True)
    assert all(url.startswith(URL) for url in requests), [url for url in requests if not url.startswith(URL)]
    assert dialogs == [], "no script ran"
    # Sign-out clears the cookie.
    page.goto(URL + "/dashboard")
    page.click("form.signout button")
    page.wait_for_url(URL + "/dashboard/signin")
    page.goto(URL + "/dashboard/prompts")
    assert page.url.endswith("/dashboard/signin")
    context.close()


def test_numbers_equal_the_analytics_api(population, browser):
    key, _ = population
    context, page, _, _ = sign_in(browser, key)
    for group in ["platform", "appVersion"]:
        page.goto(URL + f"/dashboard/prompts?groupBy={group}&from=2026-11-19")
        names = headers(page, "prompts")
        assert "choices" in names and not any(name.startswith("choice") and name != "choices" for name in names), names
        rows = table(page, "prompts")
        api = call("GET", f"/v1/analytics/prompts?groupBy={group}&from=2026-11-19", key)["rows"]
        assert len(rows) == len(api)
        for cells, expected in zip(rows, api):
            shown = dict(zip(names, cells))
            assert shown[group][0] == str(expected[group])
            assert shown["prompt"][0] == expected["prompt"]
            for field in ["shown", "answered", "inferred"]:
                assert int(shown[field][1]) == expected[field], (group, field)
            for field in ["grantRate", "alwaysRate"]:
                if expected[field] is None:
                    assert shown[field][1] == ""
                else:
                    assert float(shown[field][1]) == expected[field], (group, field)
        # The choices are one cell of named counts, each with its exact value.
        assert folded(page, "prompts") == [expected["choices"] for expected in api], group
    page.goto(URL + "/dashboard")
    statuses = {cells[0][0]: int(cells[1][1]) for cells in table(page, "statuses")}
    api = {row["status"]: row["count"] for row in call("GET", "/v1/analytics/statuses", key)["rows"]}
    assert statuses == api
    page.goto(URL + "/dashboard/escalation")
    escalation = dict(zip(headers(page, "escalations"), table(page, "escalations")[0]))
    for field, value in call("GET", "/v1/analytics/escalations", key)["rows"][0].items():
        assert int(escalation[field][1]) == value
    # The CSV link of a table downloads the same numbers.
    page.goto(URL + "/dashboard/prompts?groupBy=platform&from=2026-11-19")
    href = page.get_attribute("p.csv a", "href")
    csv = context.request.get(URL + href)
    assert csv.status == 200 and csv.headers["content-type"].startswith("text/csv")
    header = csv.text().splitlines()[0]
    assert header.startswith("platform,prompt,shown,sessionShown,answered,inferred")
    assert "choices:allowWhileUsing" in header.split(","), "the CSV spreads the folded choices into a column each"
    context.close()


def test_device_timeline_matches_history_and_marks_inferred_answers(population, browser):
    key, other = population
    context, page, _, _ = sign_in(browser, key)
    page.goto(URL + "/dashboard")
    page.fill("input[name=user]", "user-3")
    page.fill("input[name=device]", "phone")
    page.click("form[action='/dashboard/device'] button")
    page.wait_for_url(URL + "/dashboard/users/user-3/devices/phone")
    history = call("GET", "/v1/users/user-3/devices/phone/history", key)["entries"]
    rows = table(page, "timeline")
    assert [int(cells[0][1]) for cells in rows] == [entry["version"] for entry in history]
    types = page.eval_on_selector_all("table#timeline tbody tr td:nth-child(3) code", "codes => codes.map(c => c.textContent)")
    assert types == [entry["type"] for entry in history]
    assert [cells[5][0] for cells in rows] == [f'{e["before"]["status"]} → {e["after"]["status"]}' for e in history]
    effects = " ".join(cells[4][0] for cells in rows)
    assert "inferred: whenInUse answered allowWhileUsing" in effects and "inferred answer corrected" in effects
    # The state as of version 2.
    page.goto(URL + "/dashboard/users/user-3/devices/phone?version=2")
    state = {cells[0][0]: cells[1][0] for cells in table(page, "state")}
    api = call("GET", "/v1/users/user-3/devices/phone/state?version=2", key)["state"]
    assert state["status"] == api["status"] and state["pendingPrompt"] == api["pendingPrompt"]
    context.close()
    # Another app's key never shows this app's device.
    context, page, _, _ = sign_in(browser, other)
    page.goto(URL + "/dashboard/users/user-3/devices/phone")
    assert table(page, "timeline") == [[["No data for these filters.", None]]]
    context.close()


def test_every_chart_states_the_api_figures(population, browser):
    key, _ = population
    context, page, _, _ = sign_in(browser, key, width=1280)
    page.goto(URL + "/dashboard")
    devices = counts(figures(chart_name(page, "statuses"))["devices"])
    assert devices == {row["status"]: row["count"] for row in call("GET", "/v1/analytics/statuses", key)["rows"]}
    rates = figures(chart_name(page, "prompts"))
    api = call("GET", "/v1/analytics/prompts", key)["rows"]
    assert rates == {row["prompt"]: f'grant rate {percent(row["grantRate"])}, Always rate {percent(row["alwaysRate"])}' for row in api}
    trend = figures(chart_name(page, "trend"))
    expected = {}
    for row in call("GET", "/v1/analytics/prompts?groupBy=day", key)["rows"]:
        expected.setdefault(row["prompt"], [])
        if row["grantRate"] is not None:
            expected[row["prompt"]].append(f'{row["day"]} {percent(row["grantRate"])}')
    assert {prompt: [] if line == "none" else line.split(", ") for prompt, line in trend.items()} == expected

    for group in ["platform", "appVersion"]:
        page.goto(URL + f"/dashboard/prompts?groupBy={group}")
        bars = figures(chart_name(page, "prompts"))
        api = call("GET", f"/v1/analytics/prompts?groupBy={group}", key)["rows"]
        assert {label: counts(text) for label, text in bars.items()} == \
            {f'{row["prompt"]} prompt, {group} {row[group]}': row["choices"] for row in api}, group
    # SPEC §8's own form: the prompt, then each choice with its count.
    page.goto(URL + "/dashboard/prompts?groupBy=platform")
    assert re.search(r"whenInUse prompt, platform iOS: allowWhileUsing \d+", chart_name(page, "prompts"))

    for path, table_id, kind in [("/dashboard/escalation", "escalations", "escalations"),
                                 ("/dashboard/location-button", "location-button", "location-button")]:
        page.goto(URL + path)
        _, _, body = chart_name(page, table_id).partition(". ")
        steps = dict((match.group(1), int(match.group(2))) for match in (re.match(r"(\w+) (\d+)", part) for part in body.split("; ")))
        row = call("GET", f"/v1/analytics/{kind}", key)["rows"][0]
        assert len(steps) >= 6 and steps == {field: value for field, value in row.items() if field in steps}, (path, steps, row)

    page.goto(URL + "/dashboard/settings")
    lines = {name: line.split(", ") for name, line in figures(chart_name(page, "settings")).items()}
    api = call("GET", "/v1/analytics/settings?groupBy=day", key)["rows"]
    assert lines == {name: [f'{row["day"]} {row[name]}' for row in api] for name in ["upgrades", "downgrades"]}

    page.goto(URL + "/dashboard/features")
    columns = headers(page, "features")
    features = {cells[0][0]: dict(zip(columns, cells)) for cells in table(page, "features")}
    decisions = {label: counts(text) for label, text in figures(chart_name(page, "features")).items()}
    assert set(decisions) == set(features)
    for feature, row in features.items():
        assert decisions[feature]["enabled"] == int(row["enabled"][1])
        assert sum(decisions[feature].values()) == int(row["devices"][1]), feature

    for user in ["user-0", "user-3"]:
        page.goto(URL + f"/dashboard/users/{user}/devices/phone")
        history = call("GET", f"/v1/users/{user}/devices/phone/history", key)["entries"]
        runs = []
        for entry in history:
            status = entry["after"]["status"]
            if runs and runs[-1][0] == status:
                runs[-1][2] = entry["version"]
            else:
                runs.append([status, entry["version"], entry["version"]])
        bands = "; ".join(f"{s} at version {a}" if a == b else f"{s} from version {a} to {b}" for s, a, b in runs)
        prompts = [f'{effect["prompt"]} at version {entry["version"]}'
                   for entry in history for effect in entry["effects"] if effect["kind"] == "promptShown"]
        assert prompts, "the population's devices were prompted"
        assert chart_name(page, "timeline") == f"Status after each event, prompts marked. {bands}. Prompts: {'; '.join(prompts)}."
    context.close()


def test_the_device_page_writes_events_in_words_never_json(population, browser):
    key, _ = population
    context, page, _, _ = sign_in(browser, key)
    for index in range(4):
        page.goto(URL + f"/dashboard/users/user-{index}/devices/phone")
        assert re.search(r'\{"', page.inner_text("main")) is None, f"user-{index}: raw JSON on the device page"
        assert "{&quot;" not in page.content()
        sentences = page.eval_on_selector_all(
            "table#timeline tbody tr td:nth-child(3)", "cells => cells.map(c => c.firstChild.textContent)")
        assert sentences[0].startswith("Reported its context: "), sentences
        data = page.eval_on_selector_all(
            "table#timeline tbody tr td:nth-child(4)",
            "cells => cells.map(c => Object.fromEntries(Array.from(c.querySelectorAll('dl.fields > div')).map(d => "
            "[d.querySelector('dt').textContent.replace(/:$/, ''), d.querySelector('dd').textContent])))")
        history = call("GET", f"/v1/users/user-{index}/devices/phone/history", key)["entries"]
        assert len(data) == len(history)
        for fields, entry in zip(data, history):
            assert set(fields) == set(entry["data"]), (fields, entry["data"])
            for name, value in entry["data"].items():
                if isinstance(value, str):
                    assert fields[name] == value
        if index == 0:
            assert sentences[1:5] == ["Asked for When In Use", "Chose Allow While Using", "Asked for Always", "Chose Change to Always Allow"]
        if index == 2:
            assert "Settings: location While Using the App" in sentences
    context.close()


def test_no_chart_or_table_is_wider_than_its_box(population, browser):
    key, _ = population
    os.makedirs(SHOTS, exist_ok=True)
    measure = """() => Array.from(document.querySelectorAll('main section')).flatMap(section => {
        const style = getComputedStyle(section);
        const inner = section.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
        const found = Array.from(section.querySelectorAll('svg')).map(svg => ['chart', svg.getBoundingClientRect().width, inner, inner, 'visible']);
        for (const scroll of section.querySelectorAll('div.scroll')) {
            const table = scroll.querySelector('table');
            found.push(['table#' + table.id, table.getBoundingClientRect().width, inner, scroll.getBoundingClientRect().width,
                        getComputedStyle(scroll).overflowX]);
        }
        return found;
    })"""
    paths = PAGES + ["/dashboard/prompts?groupBy=platform", "/dashboard/location-button", "/dashboard/users/user-0/devices/phone?version=3"]
    for width in [1280, 360]:
        context, page, _, _ = sign_in(browser, key, width=width)
        for path in paths:
            page.goto(URL + path)
            boxes = page.evaluate(measure)
            assert any(kind == "chart" for kind, *_ in boxes) or any(part in path for part in TABLES_ONLY), path
            for kind, drawn, inner, scroll, overflow in boxes:
                if kind == "chart" or width == 1280:
                    assert drawn <= inner + 0.5, f"{path} at {width} px: {kind} is {drawn} px in a box of {inner} px"
                else:
                    # At 360 px a table that cannot fold scrolls inside its own box.
                    assert scroll <= inner + 0.5 and overflow == "auto", f"{path} at {width} px: {kind}'s box is {scroll} px of {inner}"
            name = path.strip("/").replace("?", "-").replace("=", "-").replace("/", "-") or "dashboard"
            page.screenshot(path=os.path.join(SHOTS, f"{name}-{width}.png"), full_page=True)
        context.close()


def test_client_text_is_shown_as_text(population, browser):
    key, _ = population
    context, page, _, dialogs = sign_in(browser, key)
    page.goto(URL + "/dashboard/prompts?groupBy=appVersion")
    versions = [cells[0][0] for cells in table(page, "prompts")]
    assert HOSTILE in versions, "the hostile app version is shown, as text"
    assert page.query_selector("script") is None
    page.goto(URL + "/dashboard/users/user-0/devices/phone")
    assert HOSTILE in page.inner_text("table#timeline")
    assert dialogs == []
    context.close()


def test_activity_lists_the_apps_changes_newest_first(population, browser):
    key, _ = population
    context, page, _, dialogs = sign_in(browser, key)
    page.goto(URL + "/dashboard/activity")
    assert page.query_selector("a.active[href='/dashboard/activity']") is not None
    rows = [[cell[0] for cell in cells] for cells in table(page, "activity")]
    actions = [cells[1] for cells in rows]
    assert actions[0] == "dashboardSignIn", actions
    assert actions[-3:] == ["featurePut", "featurePut", "appCreated"], actions
    assert rows[-1][2] == "admin token" and rows[-1][3] != ""
    assert {cells[3] for cells in rows if cells[1] == "featurePut"} == {"nearby", "trip-log"}
    assert headers(page, "activity") == ["at", "action", "by", "target", "details"]
    assert dialogs == []
    context.close()


def test_a_360_px_window_never_scrolls_sideways(population, browser):
    key, _ = population
    context, page, _, _ = sign_in(browser, key, width=360)
    for path in PAGES + ["/dashboard/signin"]:
        page.goto(URL + path)
        overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, f"{path} scrolls {overflow} px sideways at 360 px"
    page.goto(URL + "/dashboard/prompts?groupBy=appVersion")
    os.makedirs(SHOTS, exist_ok=True)
    page.screenshot(path=os.path.join(SHOTS, "prompts-360.png"), full_page=True)
    context.close()


# ---- Experiments (SPEC §16 "Dashboard"): the results API's numbers, and the stop form.

RESULT_COLUMNS = ["variant", "exposed", "answered", "granted", "grantRate", "ci95", "exposedGrantRate", "ci95Exposed",
                  "uplift", "pValue"]


@pytest.fixture(scope="module")
def read_key(population):
    key, _ = population
    return call("POST", "/v1/keys", key, {"scope": "read"})["key"]


def fresh_admin_key(key):
    """A key of its own for a test that signs in: sign-ins are limited to 10 per key a minute
    (SPEC §14), and the tests before it sign in with the population's key."""
    return call("POST", "/v1/keys", key, {"scope": "admin"})["key"]


def results_api(key, csv=False):
    if not csv:
        return call("GET", f"/v1/experiments/{EXPERIMENT}/results", key)
    request = urllib.request.Request(URL + f"/v1/experiments/{EXPERIMENT}/results",
                                     headers={"Authorization": f"Bearer {key}", "Accept": "text/csv"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read().decode()


def exposed_figure(row):
    """A variant's bar as the chart's accessible name states it."""
    text = f'exposed grant rate {percent(row["exposedGrantRate"])}'
    if row["ci95Exposed"] is not None:
        low, high = row["ci95Exposed"]
        text += f" (95% interval {percent(low)} to {percent(high)})"
    return text


def result_cells(page):
    """The results table's rows as lists of (text, data-value, {part: data-value})."""
    return page.eval_on_selector_all(
        "table#results tbody tr",
        "rows => rows.map(r => Array.from(r.cells).map(c => [c.textContent, c.getAttribute('data-value'), "
        "Object.fromEntries(Array.from(c.querySelectorAll('span.part')).map(s => [s.dataset.name, s.dataset.value]))]))")


def test_experiments_pages_state_the_results_api(population, browser):
    key, _ = population
    api = results_api(key)
    assert [row["variant"] for row in api["variants"]] == ["dialog", "early"], "the control first"
    assert sum(row["exposed"] for row in api["variants"]) == 24, "every device was exposed once"
    assert sum(row["answered"] for row in api["variants"]) > 0, "answers after the exposures count"
    context, page, requests, dialogs = sign_in(browser, fresh_admin_key(key), width=1280)

    # The list: a card per experiment with its state, prompt kinds and a chart of exposed grant rates.
    page.goto(URL + "/dashboard/experiments")
    assert page.query_selector("a.active[href='/dashboard/experiments']") is not None
    card = f"section.experiment[data-experiment='{EXPERIMENT}']"
    assert page.inner_text(f"{card} .state") == "running"
    assert "prompt whenInUse" in page.inner_text(card)
    name = page.get_attribute(f"{card} svg[role=img]", "aria-label")
    assert name.startswith(f"{EXPERIMENT}: exposed grant rate per variant. ")
    assert figures(name) == {row["variant"]: exposed_figure(row) for row in api["variants"]}
    listed = {cells[0][0]: dict(zip(headers(page, "experiments"), cells)) for cells in table(page, "experiments")}
    assert listed[EXPERIMENT]["state"][0] == "running" and listed[EXPERIMENT]["variants"][0] == "dialog 50, early 50"

    # The experiment's page: the chart states each variant's exposed grant rate with its
    # interval and the grant rate of those who answered, as the results API gives them.
    page.click(f"{card} h2 a")
    page.wait_for_url(URL + f"/dashboard/experiments/{EXPERIMENT}")
    assert HOSTILE in page.inner_text("table#definition"), "the description is shown as text"
    bars = figures(chart_name(page, "results"))
    assert bars == {row["variant"]: exposed_figure(row) + f', grant rate of those who answered {percent(row["grantRate"])}'
                    for row in api["variants"]}
    # The table: the API's fields, every number exact in data-value (an interval's bounds in its parts).
    assert headers(page, "results") == RESULT_COLUMNS
    rows = result_cells(page)
    assert len(rows) == len(api["variants"])
    for cells, expected in zip(rows, api["variants"]):
        shown = dict(zip(RESULT_COLUMNS, cells))
        assert shown["variant"][0] == expected["variant"]
        for field in ["exposed", "answered", "granted"]:
            assert int(shown[field][1]) == expected[field], field
        for field in ["grantRate", "exposedGrantRate", "uplift", "pValue"]:
            if expected[field] is None:
                assert shown[field][1] == "", field
            else:
                assert float(shown[field][1]) == expected[field], field
        for field in ["ci95", "ci95Exposed"]:
            if expected[field] is None:
                assert shown[field][1] == "" and shown[field][2] == {}, field
            else:
                assert [float(shown[field][2]["low"]), float(shown[field][2]["high"])] == expected[field], field
    # Its CSV link downloads the API's CSV.
    href = page.get_attribute("section:has(table#results) p.csv a", "href")
    csv = context.request.get(URL + href)
    assert csv.status == 200 and csv.headers["content-type"].startswith("text/csv")
    assert csv.text() == results_api(key, csv=True)
    # Reading the pages exposed no one.
    assert results_api(key) == api
    assert all(url.startswith(URL) for url in requests) and dialogs == []
    os.makedirs(SHOTS, exist_ok=True)
    page.screenshot(path=os.path.join(SHOTS, "experiment-1280.png"), full_page=True)
    context.close()


def test_an_admin_session_stops_an_experiment_and_a_read_session_cannot(population, read_key, browser):
    key, _ = population
    stop = URL + f"/dashboard/experiments/{EXPERIMENT}/stop"
    # A read key's session reads the experiment but has no form, and its POST is refused.
    context, page, _, _ = sign_in(browser, read_key)
    page.goto(URL + f"/dashboard/experiments/{EXPERIMENT}")
    assert page.query_selector("form#stop") is None and page.query_selector("select[name=winner]") is None
    assert page.query_selector("#read-only") is not None
    posted = context.request.post(stop, form={"winner": "early"}, headers={"Origin": URL}, max_redirects=0)
    assert posted.status == 403
    context.close()
    assert call("GET", f"/v1/experiments/{EXPERIMENT}", key)["state"] == "running"

    context, page, _, dialogs = sign_in(browser, fresh_admin_key(key))
    # Another site's Origin, or none: 403. A field the form does not have: 422; a winner that is
    # no variant: 422 with the API's message. Nothing stopped.
    for origin in ["http://evil.example", None]:
        posted = context.request.post(stop, form={"winner": "early"}, headers={"Origin": origin} if origin else {}, max_redirects=0)
        assert posted.status == 403, origin
    posted = context.request.post(stop, form={"winner": "early", "colour": "red"}, headers={"Origin": URL}, max_redirects=0)
    assert posted.status == 422 and "colour" in posted.text()
    posted = context.request.post(stop, form={"winner": "nobody"}, headers={"Origin": URL}, max_redirects=0)
    assert posted.status == 422 and "winner" in posted.text()
    assert call("GET", f"/v1/experiments/{EXPERIMENT}", key)["state"] == "running"

    # The form: the control chosen at first; stop with the other variant, 303 back to the page.
    page.goto(URL + f"/dashboard/experiments/{EXPERIMENT}")
    assert page.eval_on_selector("form#stop select[name=winner]", "s => s.value") == "dialog"
    page.select_option("form#stop select[name=winner]", "early")
    with page.expect_navigation():
        page.click("form#stop button")
    assert page.url == URL + f"/dashboard/experiments/{EXPERIMENT}?stopped=1"
    assert page.inner_text("#stopped") == "Stopped."
    assert "winner early" in page.inner_text("#status")
    assert page.query_selector("form#stop") is None, "a stopped experiment has no form"
    stored = call("GET", f"/v1/experiments/{EXPERIMENT}", key)
    assert stored["state"] == "stopped" and stored["winner"] == "early" and stored["stopReason"] == "operator"
    definition = {cells[0][0]: cells[1][0] for cells in table(page, "definition")}
    assert definition["winner"] == "early" and definition["stopReason"] == "operator"
    # Stopping again: 409, the page says why.
    posted = context.request.post(stop, form={"winner": "dialog"}, headers={"Origin": URL}, max_redirects=0)
    assert posted.status == 409 and 'id="error"' in posted.text()
    # The list and the Activity page say the same.
    page.goto(URL + "/dashboard/experiments")
    card = f"section.experiment[data-experiment='{EXPERIMENT}']"
    assert page.inner_text(f"{card} .state") == "stopped"
    assert page.inner_text(f"{card} .outcome") == "stopReason operator, winner early"
    page.goto(URL + "/dashboard/activity")
    stops = [[cell[0] for cell in cells] for cells in table(page, "activity") if cells[1][0] == "experimentStopped"]
    assert len(stops) == 1 and stops[0][3] == EXPERIMENT and stops[0][2].startswith("key "), stops
    assert dialogs == []
    context.close()
