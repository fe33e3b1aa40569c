"""`dt docs serve`: target/docs/ over HTTP on 127.0.0.1 only, generated again when a page is asked
for after the project (its files, or its warehouse's Delta logs) changed."""

from __future__ import annotations

import os
import sys
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from markupsafe import escape

from dtcli.errors import DtError, UsageError

HOST = "127.0.0.1"        # never another interface: the site shows SQL and warehouse paths
STALE_AFTER = 60          # seconds: lags and "behind" are relative to when the site was generated
REMOTE_RECHECK = 30       # seconds: an object-store warehouse is not watched, only re-read this often


class DocsServer:
    def __init__(self, project_dir: str | Path, target: str | None, select: list[str] | None, port: int):
        from dtcli import api

        self.project_dir, self.target, self.select = Path(project_dir), target, select
        project = api.load(self.project_dir, target)
        self.root, self.out = project.root, project.target_dir / "docs"
        self._lock = threading.Lock()
        self._project = None            # as loaded for the last generation
        self._seen: tuple | None = None
        self._generated_at = 0.0
        self.regenerate_if_changed()      # a project that does not check fails here, before listening
        handler = partial(_Handler, docs=self, directory=str(self.out))
        try:
            self.httpd = ThreadingHTTPServer((HOST, port), handler)
        except OSError as exc:
            raise UsageError(f"cannot listen on {HOST}:{port}: {exc.strerror or exc}",
                             hint="pass another --port, or --port 0 for any free one") from None
        self.url = f"http://{HOST}:{self.httpd.server_address[1]}/"

    def regenerate_if_changed(self) -> bool:
        """Generate the site when the project or its warehouse changed since the last time, or it
        is older than STALE_AFTER seconds; returns whether it did."""
        from dtcli import api
        from dtcli.api.docs import generate
        from dtcli.api.watch import clock_from_env

        with self._lock:
            # the project of the last generation tells where to look: loading it again (every
            # file parsed) is what a change costs, not what a request costs
            if self._project is not None and fingerprint(self._project) == self._seen \
                    and time.monotonic() - self._generated_at < STALE_AFTER:
                return False
            project = api.load(self.project_dir, self.target, check_sources=True)
            seen = fingerprint(project)
            checked = api.check(project, now=clock_from_env().now(), with_stats=True)
            generate(checked, self.select, self.out)
            self._project, self._seen, self._generated_at = project, seen, time.monotonic()
            return True

    def serve_forever(self) -> None:
        self.httpd.serve_forever(poll_interval=0.2)

    def shutdown(self) -> None:
        self.httpd.shutdown()

    def close(self) -> None:
        self.httpd.server_close()


def fingerprint(project) -> tuple:
    """What the site depends on, cheaply: every project file's size and time, and the time of
    each Delta log folder in the warehouse (a commit adds a file to it) and of local sources."""
    root = project.root
    seen: list[tuple] = []
    for base in (root / "dt_project.yml", root / "tables", root / "seeds"):
        if base.is_file():
            st = base.stat()
            seen.append((str(base), st.st_mtime_ns, st.st_size))
        for folder, _, files in os.walk(base):
            seen.append((folder, os.stat(folder).st_mtime_ns))
            for name in sorted(files):
                st = os.stat(os.path.join(folder, name))
                seen.append((name, st.st_mtime_ns, st.st_size))
    if "://" in project.warehouse:
        seen.append(int(time.time() // REMOTE_RECHECK))
        return tuple(seen)
    logs = [Path(project.warehouse, "_dt"), Path(project.warehouse)]
    paths = [p / "_delta_log" for base in logs if base.is_dir() for p in sorted(base.iterdir()) if p.is_dir()]
    paths += [Path(s.path, "_delta_log") for s in project.sources.values() if "://" not in s.path]
    for log in paths:
        try:
            seen.append((str(log), log.stat().st_mtime_ns))
        except OSError:
            seen.append((str(log), None))
    return tuple(seen)


class _Handler(SimpleHTTPRequestHandler):
    def __init__(self, *args, docs: DocsServer, **kwargs):
        self.docs = docs
        super().__init__(*args, **kwargs)

    def _page_asked(self) -> bool:
        path = self.path.split("?", 1)[0]
        return path.endswith(("/", ".html", "project.json"))

    def _fresh(self) -> bool:
        if not self._page_asked():
            return True
        try:
            self.docs.regenerate_if_changed()
            return True
        except DtError as err:
            from dtcli.redact import scrub

            message = scrub(str(err))
            sys.stderr.write(f"dt docs serve: not regenerated: {message}\n")
            body = (f"<!doctype html><meta charset='utf-8'><title>dt docs: error</title>"
                    f"<h1>The project does not check</h1><pre>{escape(message)}</pre>"
                    f"<p>Fix it and reload; the last site is in {escape(str(self.docs.out))}.</p>").encode()
            self.send_response(500)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
            return False

    def do_GET(self) -> None:
        if self._fresh():
            super().do_GET()

    def do_HEAD(self) -> None:
        if self._fresh():
            super().do_HEAD()

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")   # a reload shows what was regenerated
        super().end_headers()

    def log_message(self, format: str, *args) -> None:   # one line per request is noise here
        pass
