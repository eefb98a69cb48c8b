"""The documentation stands alone and agrees with openapi.yaml (the one description of the
HTTP API): every path and every error code of openapi.yaml is in docs/api.md, every documented
endpoint exists there, and nothing points outside the repository."""
import glob
import os
import re

import yaml

ROOT = os.environ.get("LOCGATE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))


def read(path):
    with open(os.path.join(ROOT, path)) as handle:
        return handle.read()


def normalized(path):
    return re.sub(r"\{[^}]+\}", "{}", path)


def test_every_openapi_path_and_code_is_documented():
    spec = yaml.safe_load(read("openapi.yaml"))
    api = read("docs/api.md")
    documented = {normalized(path) for path in re.findall(r"(/(?:v1|ofrep|healthz|readyz|metrics)[A-Za-z0-9/{}._-]*)", api)}
    for path in spec["paths"]:
        assert any(matches(doc, normalized(path)) for doc in documented), f"{path} is not in docs/api.md"
    codes = spec["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]["enum"]
    for code in codes:
        assert f"`{code}`" in api, f"error code {code} is not in docs/api.md"


def test_documented_endpoints_exist_in_openapi():
    spec = yaml.safe_load(read("openapi.yaml"))
    known = {normalized(path) for path in spec["paths"]}
    table = read("docs/api.md").split("| endpoint | purpose |", 1)[1].split("\n\n", 1)[0]
    for method, path in re.findall(r"`(GET|POST|PUT|DELETE) (/[^`\s?]*)", table):
        path = re.sub(r"\[/\{[^}]+\}\]", "", path)
        assert any(matches(path, template) for template in known), f"{method} {path} of docs/api.md is not in openapi.yaml"


def matches(path, template):
    """A documented path (concrete or templated) against an openapi template."""
    parts, pattern = normalized(path).strip("/").split("/"), template.strip("/").split("/")
    return len(parts) == len(pattern) and all(p == t or t == "{}" for p, t in zip(parts, pattern))


def test_nothing_points_outside_the_repository():
    for path in ["README.md"] + glob.glob(os.path.join(ROOT, "docs", "*.md")):
        text = read(os.path.relpath(path, ROOT) if os.path.isabs(path) else path)
        assert "../shared" not in text and "reference/apple" not in text, path


def test_configuration_variables_are_documented_where_they_are_read():
    """Every LOCGATE_ variable the server and the tools read is in docs/operations.md's table of
    variables, and every variable of that table is read somewhere: the one home of the
    configuration agrees with the code."""
    read_by_code = set()
    for folder in ("Sources/locgate", "Sources/LocgateCommandSupport", "Schema", "Sources/LocationGateService"):
        for path in glob.glob(os.path.join(ROOT, folder, "**", "*.swift"), recursive=True):
            with open(path) as handle:
                read_by_code |= set(re.findall(r'"(LOCGATE_[A-Z_]+)"', handle.read()))
    table = set(re.findall(r"^\| `(LOCGATE_[A-Z_]+)` \|", read("docs/operations.md"), re.MULTILINE))
    assert read_by_code, "no variable found in the sources"
    assert read_by_code - table == set(), f"read but not in docs/operations.md's table: {sorted(read_by_code - table)}"
    assert table - read_by_code == set(), f"documented but read nowhere: {sorted(table - read_by_code)}"
