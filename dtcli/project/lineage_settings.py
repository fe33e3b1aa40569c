"""`openlineage:` in dt_project.yml (or a target): where a run sends its OpenLineage events.

The block has the OpenLineage client's own shape (`namespace:`, `transport:` with `type: http |
file | console` and that transport's keys), so a team copies it from the openlineage.yml it
already has. Two things differ, both for secrets: an API key is never written in the file (it
would be committed), `api_key_env:` names the environment variable holding it; and the keys are
a checked subset, so a typo is an error at its line instead of an event that never arrives
(the client's full configuration stays reachable through OPENLINEAGE_CONFIG).

A target's block replaces the project's (`openlineage: null` in a target turns events off).
Without a block, the client's environment variables decide (dtcli/api/lineage_transport.py).
"""

from __future__ import annotations

from pathlib import Path

from dtcli.errors import ConfigError, suggest
from dtcli.model import LineageSpec
from dtcli.model.definitions import LineageTransport
from dtcli.project.yamlio import LineDict, expect_mapping

KEYS = {"namespace", "transport", "timeout"}
TRANSPORT_KEYS = {
    "http": {"type", "url", "endpoint", "api_key_env", "verify", "compression"},
    "file": {"type", "log_file_path", "append"},
    "console": {"type"},
}
# Seconds a run may wait for the lineage backend, in all (one HTTP request's timeout, and the
# most the end of a run waits for unsent events): a backend that is down or slow costs a run at
# most this, once. The client's own default HTTP timeout is 5 s.
DEFAULT_TIMEOUT = 5.0
_EXAMPLE = "e.g. openlineage: {transport: {type: http, url: 'http://localhost:5000'}}"
_SECRET_KEYS = {"auth", "apikey", "api_key", "token"}


def parse_openlineage(raw: LineDict, file: Path, root: Path) -> LineageSpec | None:
    """The `openlineage:` block of `raw` (the project's mapping or a target's), checked; None
    when absent or null."""
    if raw.get("openlineage") is None:
        return None
    line = raw.line_of("openlineage")
    block = expect_mapping(raw["openlineage"], file, "openlineage", line)
    _check_keys(block, KEYS, file, "openlineage", line)
    namespace = block.get("namespace")
    if namespace is not None and not (isinstance(namespace, str) and namespace.strip()):
        raise ConfigError(f"openlineage namespace must be a name, not {namespace!r}", file=file,
                          line=block.line_of("namespace") or line, hint="e.g. namespace: shop_prod")
    timeout = block.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 300:
        raise ConfigError(f"openlineage timeout must be a number of seconds above 0 (at most 300), not {timeout!r}",
                          file=file, line=block.line_of("timeout") or line,
                          hint=f"e.g. timeout: {DEFAULT_TIMEOUT:g}: a run waits at most that long for the backend")
    if block.get("transport") is None:
        raise ConfigError("openlineage needs a transport", file=file, line=line, hint=_EXAMPLE)
    transport = _transport(block, file, root, block.line_of("transport") or line)
    return LineageSpec(namespace=namespace.strip() if namespace else None, transport=transport,
                       timeout=float(timeout), file=str(file), line=line)


def _transport(block: LineDict, file: Path, root: Path, line: int | None) -> LineageTransport:
    spec = expect_mapping(block["transport"], file, "openlineage transport", line)
    kind = spec.get("type")
    if kind not in TRANSPORT_KEYS:
        raise ConfigError(f"openlineage transport type must be one of http, file, console, not {kind!r}",
                          file=file, line=spec.line_of("type") or line,
                          hint=suggest(str(kind), TRANSPORT_KEYS) or _EXAMPLE)
    for key in spec:
        if str(key).lower() in _SECRET_KEYS:
            raise ConfigError(f"openlineage transport: '{key}' would keep a secret in {file.name}, which is "
                              "committed", file=file, line=spec.line_of(key),
                              hint="put the API key in an environment variable and name it: "
                                   "api_key_env: OPENLINEAGE_API_KEY")
    _check_keys(spec, TRANSPORT_KEYS[kind], file, f"openlineage {kind} transport", line)
    out: LineageTransport = dict(spec)
    if kind == "http":
        url = spec.get("url")
        if not (isinstance(url, str) and url.startswith(("http://", "https://"))):
            raise ConfigError(f"openlineage http transport needs a url starting with http:// or https://, not {url!r}",
                              file=file, line=spec.line_of("url") or line,
                              hint="e.g. url: 'http://marquez.internal:5000'")
        for key in ("endpoint", "api_key_env"):
            if key in spec and not (isinstance(spec[key], str) and spec[key]):
                raise ConfigError(f"openlineage http transport: {key} must be text", file=file,
                                  line=spec.line_of(key), hint="e.g. endpoint: api/v1/lineage, "
                                                               "api_key_env: OPENLINEAGE_API_KEY")
    elif kind == "file":
        path = spec.get("log_file_path")
        if not (isinstance(path, str) and path):
            raise ConfigError("openlineage file transport needs log_file_path", file=file, line=line,
                              hint="e.g. log_file_path: target/openlineage.jsonl (one event per line)")
        if "://" in path:
            raise ConfigError("openlineage file transport writes local files only", file=file,
                              line=spec.line_of("log_file_path"), hint="use a path on this machine, or type: http")
        out["log_file_path"] = str((root / path).resolve())
        append = spec.get("append", True)
        if not isinstance(append, bool):
            raise ConfigError(f"openlineage file transport: append must be true or false, not {append!r}",
                              file=file, line=spec.line_of("append"),
                              hint="true (the default): one file, one event per line")
        out["append"] = append
    return out


def _check_keys(mapping: LineDict, allowed: set[str], file: Path, what: str, line: int | None) -> None:
    for key in mapping:
        if key not in allowed:
            raise ConfigError(f"unknown {what} key '{key}'", file=file, line=mapping.line_of(key) or line,
                              hint=suggest(str(key), allowed) or f"known keys: {', '.join(sorted(allowed))}")
