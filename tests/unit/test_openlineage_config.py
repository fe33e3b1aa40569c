"""`openlineage:` in dt_project.yml and a target, and the client's environment variables: what a
run sends where; every mistake an error naming the file, the line and the fix (exit 2)."""

from __future__ import annotations

import textwrap

import pytest

from dtcli.api.lineage_transport import destination
from dtcli.errors import ConfigError
from dtcli.model import LineageSpec
from dtcli.project import load_project
from tests.helpers import dt, write_project

SOURCES = "sources:\n  src: {path: data/src}\n"


def _load(tmp_path, block: str, target: str | None = None):
    root = write_project(tmp_path / "proj", {"d": "SELECT x FROM src"}, config=SOURCES + textwrap.dedent(block))
    return load_project(root, target=target)


def test_the_block_in_the_clients_shape_and_a_target_overrides_it(tmp_path):
    project = _load(tmp_path, """\
        openlineage:
          namespace: shop_dev
          timeout: 2
          transport: {type: http, url: 'http://marquez:5000', endpoint: api/v1/lineage, api_key_env: MARQUEZ_KEY}
        targets:
          ci:
            openlineage: {transport: {type: file, log_file_path: target/openlineage.jsonl}}
          quiet:
            openlineage: null
        """)
    assert project.openlineage == LineageSpec(
        transport={"type": "http", "url": "http://marquez:5000", "endpoint": "api/v1/lineage",
                   "api_key_env": "MARQUEZ_KEY"},
        namespace="shop_dev", timeout=2.0, file=str(project.root / "dt_project.yml"), line=9)
    ci = load_project(project.root, target="ci").openlineage
    assert ci.transport == {"type": "file", "log_file_path": str(project.root / "target" / "openlineage.jsonl"),
                            "append": True}
    assert ci.namespace is None and ci.timeout == 5.0
    assert load_project(project.root, target="quiet").openlineage is None


@pytest.mark.parametrize("block, wrong, hint", [
    ("openlineage: {transport: {type: kafka}}", "transport type must be one of http, file, console, not 'kafka'",
     "transport:"),
    ("openlineage: {transport: {type: htp, url: 'http://x'}}", "not 'htp'", "did you mean http?"),
    ("openlineage: {namespace: x}", "openlineage needs a transport", "type: http"),
    ("openlineage: {transport: {type: http}}", "needs a url starting with http:// or https://", "url:"),
    ("openlineage: {transport: {type: http, url: 'marquez:5000'}}", "not 'marquez:5000'", "url:"),
    ("openlineage: {transport: {type: http, url: 'http://x', auth: {type: api_key, apiKey: abc}}}",
     "'auth' would keep a secret in dt_project.yml", "api_key_env: OPENLINEAGE_API_KEY"),
    ("openlineage: {transport: {type: http, url: 'http://x', timout: 3}}", "unknown openlineage http transport key 'timout'",
     "known keys"),
    ("openlineage: {transport: {type: file}}", "file transport needs log_file_path", "log_file_path: target/"),
    ("openlineage: {transport: {type: file, log_file_path: 's3://b/k'}}", "writes local files only", "type: http"),
    ("openlineage: {transport: {type: console}, timeout: 0}", "timeout must be a number of seconds above 0",
     "timeout: 5"),
    ("openlineage: {transport: {type: console}, namspace: x}", "unknown openlineage key 'namspace'",
     "did you mean namespace?"),
    ("openlineage: [http]", "openlineage", ""),
])
def test_mistakes_name_the_file_line_and_fix(tmp_path, block, wrong, hint):
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, block + "\n")
    text = str(err.value)
    assert wrong in text and hint in text and "dt_project.yml:" in text, text


def test_validate_exits_2_on_a_bad_block(tmp_path):
    root = write_project(tmp_path / "proj", {"d": "SELECT 1 AS x"},
                         config="openlineage:\n  transport: {type: http}\n")
    result = dt("validate", "-p", str(root))
    assert result.code == 2 and "dt_project.yml:8" in result.err and "url" in result.err


def test_the_clients_environment_variables_when_there_is_no_block(tmp_path):
    project = _load(tmp_path, "")
    assert destination(project, {}) is None                                   # off
    url = destination(project, {"OPENLINEAGE_URL": "http://ol:5000", "OPENLINEAGE_API_KEY": "abcd-key",
                                "OPENLINEAGE_NAMESPACE": "prod"})
    assert (url.namespace, url.origin, url.timeout) == ("prod", "OPENLINEAGE_URL", 5.0)
    assert url.transport == {"type": "http", "url": "http://ol:5000", "endpoint": "api/v1/lineage", "timeout": 5.0,
                             "retry": url.transport["retry"], "auth": {"type": "api_key", "apiKey": "abcd-key"}}
    config = tmp_path / "openlineage.yml"
    config.write_text("transport:\n  type: file\n  log_file_path: events.jsonl\n  append: true\n")
    found = destination(project, {"OPENLINEAGE_CONFIG": str(config)})
    # as the client reads it (a relative path from the working directory)
    assert found.transport == {"type": "file", "log_file_path": "events.jsonl", "append": True}
    assert found.namespace == "proj" and found.origin == f"OPENLINEAGE_CONFIG={config}"
    assert destination(project, {"OPENLINEAGE_CONFIG": str(config), "OPENLINEAGE_DISABLED": "true"}) is None
    with pytest.raises(ConfigError, match="OPENLINEAGE_CONFIG names .* which is not a file"):
        destination(project, {"OPENLINEAGE_CONFIG": str(tmp_path / "missing.yml")})
    config.write_text("facets: {}\n")
    with pytest.raises(ConfigError, match="has no transport with a type"):
        destination(project, {"OPENLINEAGE_CONFIG": str(config)})


def test_the_block_wins_over_the_environment_and_bounds_http(tmp_path):
    project = _load(tmp_path, "openlineage: {timeout: 1.5, transport: {type: http, url: 'http://a:1'}}\n")
    found = destination(project, {"OPENLINEAGE_URL": "http://b:2", "OPENLINEAGE_API_KEY": "env-key-1"})
    assert found.transport["url"] == "http://a:1" and found.transport["timeout"] == 1.5
    assert found.transport["retry"]["total"] == 0
    assert found.transport["auth"] == {"type": "api_key", "apiKey": "env-key-1"}   # the client's key variable
