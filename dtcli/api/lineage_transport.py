"""Where a run's OpenLineage events go: the project's `openlineage:` block, else the client's
environment variables, else nowhere (no event is built at all).

The environment variables dt honours are the client's documented ones: OPENLINEAGE_CONFIG (an
openlineage.yml, whose `transport:` is taken as the client takes it), OPENLINEAGE_URL with
OPENLINEAGE_ENDPOINT and OPENLINEAGE_API_KEY, OPENLINEAGE_NAMESPACE (the jobs' namespace when
the block names none) and OPENLINEAGE_DISABLED=true (off, whatever is configured). The block
wins over the environment, as the client's explicit configuration wins over its file.

Whatever the source, an HTTP transport gets dt's bound: its request timeout is `timeout` and it
does not retry (dt stops sending for the rest of the run after the first failure instead: a
backend that is down costs one timeout, not one per event).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from dtcli import redact
from dtcli.errors import ConfigError
from dtcli.model import Project
from dtcli.project.lineage_settings import DEFAULT_TIMEOUT
from dtcli.project.yamlio import load_yaml_file

DEFAULT_ENDPOINT = "api/v1/lineage"       # the client's default (Marquez's API)
_NO_RETRY = {"total": 0, "connect": 0, "read": 0, "status": 0, "other": 0}


@dataclass
class Destination:
    transport: dict[str, object]  # the client's transport config (as the user wrote it), ready for its factory
    namespace: str
    timeout: float                # seconds: one request's bound, and the run's wait at its end
    origin: str                   # where it was configured, for messages
    problem: str | None = None    # why nothing can be sent (the run says it once and goes on)

    @property
    def kind(self) -> str:
        return str(self.transport.get("type"))


def namespace_of(project: Project, environ: Mapping[str, str] | None = None) -> str:
    """The jobs' namespace: the block's, else OPENLINEAGE_NAMESPACE, else the project's name."""
    env = os.environ if environ is None else environ
    spec = project.openlineage
    return (spec.namespace if spec else None) or env.get("OPENLINEAGE_NAMESPACE") or project.name


def destination(project: Project, environ: Mapping[str, str] | None = None) -> Destination | None:
    """The destination of `project`'s events, or None when lineage is off."""
    env = os.environ if environ is None else environ
    if env.get("OPENLINEAGE_DISABLED", "").strip().lower() == "true":
        return None
    spec = project.openlineage
    namespace = namespace_of(project, env)
    if spec is not None:
        origin = f"{spec.file}:{spec.line}" if spec.line else str(spec.file)
        out = Destination(dict(spec.transport), namespace, spec.timeout, origin)
        if out.kind == "http":
            key_env = out.transport.pop("api_key_env", None)
            key = env.get(key_env or "OPENLINEAGE_API_KEY")
            if key_env and not key:
                out.problem = (f"the environment variable {key_env} (api_key_env) is not set, so no "
                               "lineage event was sent")
            _http(out, key)
        return out
    if env.get("OPENLINEAGE_CONFIG"):
        return _from_file(Path(env["OPENLINEAGE_CONFIG"]), namespace, env)
    if env.get("OPENLINEAGE_URL"):
        out = Destination({"type": "http", "url": env["OPENLINEAGE_URL"],
                           "endpoint": env.get("OPENLINEAGE_ENDPOINT", DEFAULT_ENDPOINT)},
                          namespace, DEFAULT_TIMEOUT, "OPENLINEAGE_URL")
        _http(out, env.get("OPENLINEAGE_API_KEY"))
        return out
    return None


def _http(out: Destination, key: str | None) -> None:
    out.transport["timeout"] = out.timeout
    out.transport["retry"] = dict(_NO_RETRY)
    out.transport.setdefault("endpoint", DEFAULT_ENDPOINT)
    if key:
        out.transport["auth"] = {"type": "api_key", "apiKey": key}
        redact.remember_value(key)        # never printed or written by dt


def _from_file(path: Path, namespace: str, env: Mapping[str, str]) -> Destination:
    """OPENLINEAGE_CONFIG: the client's openlineage.yml; its `transport` as the client reads it."""
    fix = "point OPENLINEAGE_CONFIG at an openlineage.yml with a transport, or unset it"
    if not path.is_file():
        raise ConfigError(f"OPENLINEAGE_CONFIG names {path}, which is not a file", file=path, hint=fix)
    raw = load_yaml_file(path) or {}
    transport = raw.get("transport") if isinstance(raw, dict) else None
    if not isinstance(transport, dict) or not transport.get("type"):
        raise ConfigError("OPENLINEAGE_CONFIG's file has no transport with a type", file=path, hint=fix)
    transport = dict(transport)
    timeout = transport.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        timeout = DEFAULT_TIMEOUT
    out = Destination(transport, namespace, float(min(timeout, DEFAULT_TIMEOUT * 60)), f"OPENLINEAGE_CONFIG={path}")
    if out.kind == "http":
        auth = transport.get("auth") or {}
        key = auth.get("apiKey") or auth.get("api_key") if isinstance(auth, dict) else None
        _http(out, key or env.get("OPENLINEAGE_API_KEY"))
    return out


def make_transport(dest: Destination):
    """The client's transport for `dest` (its own factory, so any type the client knows works
    from OPENLINEAGE_CONFIG); a console transport's lines go to stderr, where dt's progress is."""
    from openlineage.client.transport import get_default_factory

    if dest.kind == "console":
        import logging
        import sys

        logger = logging.getLogger("openlineage.client.transport.console")
        if not logger.handlers:
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(logging.Formatter("%(message)s"))
            logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    return get_default_factory().create(dict(dest.transport))
