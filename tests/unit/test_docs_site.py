"""`dt docs generate` and `dt docs serve` without a JVM: the facts agree with `dt explain`, `dt show
refresh-history` and `dt show graph`; markup in names and messages stays text; --select limits
the site; serve regenerates when the project changes. (In a browser: tests/browser.)"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.docs_projects import SCRIPT, big_project, shop_project
from tests.helpers import dt, dt_process, no_java_env


@pytest.fixture(scope="module")
def shop(tmp_path_factory) -> Path:
    root = shop_project(tmp_path_factory.mktemp("docs") / "shop")
    result = dt("docs", "generate", "-p", str(root))
    assert result.code == 0, result.err
    return root


def _doc(root: Path) -> dict:
    return json.loads((root / "target" / "docs" / "project.json").read_text())


class _Elements(HTMLParser):
    """Every element and every piece of text of a page."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def _parse(path: Path) -> _Elements:
    parser = _Elements()
    parser.feed(path.read_text())
    return parser


def test_the_site_has_a_page_per_dt_and_source_and_opens_without_network(shop):
    site = shop / "target" / "docs"
    doc = _doc(shop)
    assert sorted(doc["dynamic_tables"]) == sorted(["valid_orders", "customer_revenue", "customer_rank", "order_audit",
                                                    "odd_names", "paused_feed", "broken_feed", "lost_table"])
    assert sorted(doc["sources"]) == ["customers", "orders"]
    for name in doc["dynamic_tables"]:
        assert (site / "tables" / f"{name}.html").is_file()
    for name in doc["sources"]:
        assert (site / "sources" / f"{name}.html").is_file()
    for page in [site / "index.html", *site.glob("*/*.html")]:
        for tag, attrs in _parse(page).tags:
            for key in ("src", "href"):
                # every script, style and link is a file of the site: nothing is fetched
                assert "://" not in attrs.get(key, "") and not attrs.get(key, "").startswith("//"), (page, tag, attrs)
    assert (site / "assets" / "vendor" / "dagre" / "dagre.min.js").stat().st_size > 10_000
    assert (site / "assets" / "vendor" / "dagre" / "LICENSE").is_file()


def test_facts_agree_with_explain_refresh_history_and_the_graph(shop):
    doc = _doc(shop)
    p = ("-p", str(shop))
    for name, table in doc["dynamic_tables"].items():
        if table["state"] == "ORPHANED":
            assert table["explain"] is None
            continue
        assert table["explain"] == dt("explain", name, *p, "--format", "json").json(), name
        assert table["refresh_history"] == dt("show", "refresh-history", name, *p, "--format", "json").json(), name
    graph = dt("show", "graph", *p, "--format", "json").json()
    assert sorted(map(tuple, doc["edges"])) == sorted(map(tuple, graph["edges"]))
    shown = {r["name"]: r for r in dt("show", "dynamic", "tables", *p, "--format", "json").json()}
    assert {n: t["status"]["scheduling_state"] for n, t in doc["dynamic_tables"].items()} == \
        {n: r["scheduling_state"] for n, r in shown.items()}


def test_states_modes_lag_and_the_overview(shop):
    doc = _doc(shop)
    tables = doc["dynamic_tables"]
    assert {n: t["state"] for n, t in tables.items()} == {
        "valid_orders": "ACTIVE", "customer_revenue": "ACTIVE", "customer_rank": "ACTIVE", "order_audit": "ACTIVE",
        "odd_names": "ACTIVE", "paused_feed": "SUSPENDED", "broken_feed": "FAILED", "lost_table": "ORPHANED"}
    assert tables["valid_orders"]["frozen"] and not tables["customer_rank"]["frozen"]
    assert tables["order_audit"]["explain"]["refresh_mode"] == "CUSTOM_INCREMENTAL"
    assert tables["customer_revenue"]["lag"]["target_seconds"] == 7200 and tables["customer_revenue"]["lag"]["behind"]
    assert not tables["valid_orders"]["lag"]["behind"]
    overview = doc["overview"]
    # behind their target lag first: 3 h against 2 h, then broken_feed's 1.2 h against 1 h
    assert [f["name"] for f in overview["freshness"][:3]] == ["customer_rank", "customer_revenue", "broken_feed"]
    assert [(r["name"], r["state"]) for r in overview["failures_last_day"]] == [("broken_feed", "FAILED")]
    # customer_rank (a window without PARTITION BY) refreshes incrementally too
    assert overview["refresh_mode_mix"] == {"ADAPTIVE": 6, "CUSTOM_INCREMENTAL": 1}
    per_day = overview["refresh_time_per_day"]
    assert len(per_day) == 14 and sum(d["refreshes"] for d in per_day) == 15
    # the UTC day of the latest refresh carries its time (that day is yesterday just after midnight)
    latest = max(r["refresh_start_time"] for t in tables.values() for r in t["refresh_history"])
    assert {d["day"]: d["seconds"] for d in per_day}[latest[:10]] > 0
    sql = tables["customer_revenue"]
    assert "{{ ref('valid_orders') }}" in sql["sql"] and "JOIN customers" in sql["sql"]
    assert "`valid_orders`" in sql["compiled_sql"] or "valid_orders" in sql["compiled_sql"]
    page = (shop / "target" / "docs" / "tables" / "valid_orders.html").read_text()
    # one timeline mark per refresh, by action
    assert page.count('class="mark ') == len(tables["valid_orders"]["refresh_history"]) == 5
    for action in ("FULL", "INCREMENTAL", "NO_DATA", "REINITIALIZE"):
        assert f'data-action="{action}"' in page


def test_markup_in_names_comments_columns_tags_and_messages_renders_as_text(shop):
    site = shop / "target" / "docs"
    for page in [site / "index.html", *site.glob("*/*.html")]:
        html = page.read_text()
        assert SCRIPT not in html, page
        parsed = _parse(page)
        scripts = [attrs for tag, attrs in parsed.tags if tag == "script"]
        # the site's own scripts only: the graph data (JSON) and two files on index.html
        assert all(a.get("src", "").startswith("assets/") or a.get("type") == "application/json" for a in scripts)
    odd = _parse(site / "tables" / "odd_names.html")
    assert SCRIPT in "".join(odd.text)                          # the column name, shown as text
    assert SCRIPT in "".join(_parse(site / "tables" / "customer_revenue.html").text)   # its comment
    assert SCRIPT in "".join(_parse(site / "tables" / "broken_feed.html").text)        # a failure message
    index = (site / "index.html").read_text()
    data = index.split('<script id="graph-data" type="application/json">')[1].split("</script>")[0]
    assert "<" not in data and SCRIPT in json.dumps(json.loads(data))   # the tag, as JSON text
    assert _doc(shop)["dynamic_tables"]["odd_names"]["explain"]["columns"][1]["name"] == SCRIPT


def test_select_limits_the_site_to_the_selection_and_what_it_reads(shop, tmp_path):
    result = dt("docs", "generate", "-p", str(shop), "--select", "+customer_rank")
    assert result.code == 0, result.err
    doc = _doc(shop)
    try:
        assert sorted(doc["dynamic_tables"]) == ["customer_rank", "customer_revenue", "valid_orders"]
        assert sorted(doc["sources"]) == ["customers", "orders"]
        assert doc["metadata"]["select"] == ["+customer_rank"]
        assert not (shop / "target" / "docs" / "tables" / "odd_names.html").exists()   # pages of others go
    finally:
        assert dt("docs", "generate", "-p", str(shop)).code == 0
    assert dt("docs", "generate", "-p", str(shop), "--select", "nope").code == 2


def test_generate_starts_no_jvm(shop):
    result = dt_process("docs", "generate", "-p", str(shop), env=no_java_env())
    assert result.returncode == 0, result.stderr
    assert "wrote 11 pages (8 dynamic tables, 2 sources)" in result.stdout


def test_a_project_of_200_dts_generates_a_page_each(tmp_path):
    root, inputs = big_project(tmp_path / "big")
    assert dt("seed", "-p", str(root)).code == 0
    result = dt("docs", "generate", "-p", str(root))
    assert result.code == 0, result.err
    doc = _doc(root)
    assert len(doc["dynamic_tables"]) == 200 and len(doc["sources"]) == 6
    assert sorted(map(tuple, doc["edges"])) == sorted((i, n) for n, ins in inputs.items() for i in ins)
    assert len(list((root / "target" / "docs" / "tables").glob("*.html"))) == 200


def test_lag_over_time_drops_when_a_refresh_ends_and_failures_do_not_move_it():
    from datetime import datetime, timedelta, timezone

    from dtcli.artifacts.manifest import HistoryRow
    from dtcli.artifacts.typed_json import from_json
    from dtcli.ui.site.charts import lag_points

    t0 = datetime(2025, 1, 1, tzinfo=timezone.utc)

    def row(state, stamp_min, end_min):
        return from_json(HistoryRow, {"state": state, "data_timestamp": (t0 + timedelta(minutes=stamp_min)).isoformat(),
                                      "refresh_end_time": (t0 + timedelta(minutes=end_min)).isoformat()})

    rows = [row("SUCCEEDED", 60, 61), row("FAILED", 30, 31), row("SUCCEEDED", 0, 2)]   # newest first
    points = [((t - t0).total_seconds() / 60, lag / 60) for t, lag in lag_points(rows, t0 + timedelta(minutes=90))]
    # 2 min after its data timestamp at the first refresh's end; 61 min just before the second
    # ends (the failure changed nothing), 1 min right after it; 30 min at generation
    assert points == [(2, 2), (61, 61), (61, 1), (90, 30)]


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_serve_binds_loopback_and_regenerates_when_the_project_changes(tmp_path):
    from dtcli.api.docs_serve import DocsServer
    from tests.helpers import write_project

    root = write_project(tmp_path / "p", {"alpha_dt": "SELECT 1 AS x"})
    server = DocsServer(root, None, None, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        assert server.httpd.server_address[0] == "127.0.0.1"
        status, page = _get(server.url)
        assert status == 200 and "alpha_dt" in page and "beta_dt" not in page
        assert _get(server.url + "assets/site.js")[0] == 200
        assert server.regenerate_if_changed() is False           # nothing changed: the site stays
        (root / "tables" / "beta_dt.sql").write_text("SELECT x FROM {{ ref('alpha_dt') }}\n")
        status, page = _get(server.url + "index.html")
        assert status == 200 and "beta_dt" in page
        assert json.loads(_get(server.url + "project.json")[1])["edges"] == [["alpha_dt", "beta_dt"]]
        (root / "tables" / "beta_dt.sql").write_text("SELECT nope FROM {{ ref('alpha_dt') }}\n")
        status, page = _get(server.url)
        assert status == 500 and "tables/beta_dt.sql" in page and "nope" in page
    finally:
        server.shutdown()
        server.close()


def test_serve_names_a_port_in_use(tmp_path):
    from tests.helpers import write_project

    root = write_project(tmp_path / "p", {"first": "SELECT 1 AS x"})
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        result = dt("docs", "serve", "-p", str(root), "--port", str(busy.getsockname()[1]))
    assert result.code == 2 and "cannot listen on 127.0.0.1" in result.err and "--port" in result.err


def test_a_dt_page_draws_its_column_lineage(shop):
    """One curve per output column and input column it is made of or depends on, links to the
    inputs' pages, the rows' columns tagged; names with markup stay text."""
    site = shop / "target" / "docs"
    lineage = _doc(shop)["dynamic_tables"]["customer_revenue"]["explain"]["column_lineage"]
    page = _parse(site / "tables" / "customer_revenue.html")
    curves = [a for tag, a in page.tags if tag == "path" and "cl-edge" in a.get("class", "")]
    assert len(curves) == sum(len(c["inputs"]) for c in lineage["columns"]) == 3
    assert sorted(a["class"] for a in curves) == ["cl-edge cl-aggregation", "cl-edge cl-identity",
                                                  "cl-edge cl-identity"]
    links = {a["href"] for tag, a in page.tags if tag == "a"}
    assert {"../tables/valid_orders.html", "../sources/customers.html"} <= links
    text = " ".join(page.text)
    assert "valid_orders.amount → revenue: aggregation" in text and "group by · join" in text
    assert "Every row depends on: customers.customer_id (group by; join)" in " ".join(text.split())
    odd = _parse(site / "tables" / "odd_names.html")
    assert "script" not in [tag for tag, _ in odd.tags] and SCRIPT in " ".join(odd.text)


def test_generate_writes_the_lineage_as_openlineage_job_events_and_sends_them(shop, monkeypatch):
    from tests.openlineage_events import Receiver, problems, read_file_events

    with Receiver() as backend:
        monkeypatch.setenv("OPENLINEAGE_URL", backend.url)
        result = dt("docs", "generate", "-p", str(shop), "--openlineage")
    assert result.code == 0, result.err
    assert "wrote 7 OpenLineage job events to" in result.out and "sent to OPENLINEAGE_URL" in result.out
    events = read_file_events(shop / "target" / "docs" / "openlineage.jsonl")
    assert [e["job"]["name"] for e in events] == [e["job"]["name"] for e in backend.events]
    assert sorted(e["job"]["name"] for e in events) == sorted(["valid_orders", "customer_revenue", "customer_rank",
                                                               "order_audit", "odd_names", "paused_feed", "broken_feed"])
    assert all("run" not in e and problems(e) == [] for e in events)
    revenue = next(e for e in events if e["job"]["name"] == "customer_revenue")
    fields = revenue["outputs"][0]["facets"]["columnLineage"]["fields"]
    assert [(f["name"].rsplit("/", 1)[1], f["field"]) for f in fields["revenue"]["inputFields"]] == [("valid_orders", "amount")]


def test_a_dt_page_shows_its_last_test_results_and_their_counts_over_time(shop):
    tests = _doc(shop)["dynamic_tables"]["valid_orders"]["data_tests"]
    # each check the DT defines with its newest result: dt test's is newer than the last audit's;
    # one never run has no status; the same rows as dt show test-results
    last = {t["name"]: (t["status"], t["failures"], t["by"]) for t in tests["last"]}
    assert last == {"not_null_valid_orders_order_id": ("warn", 3, "dt test"),
                    "unique_valid_orders_order_id": (None, None, None),
                    "positive": ("pass", 0, "refresh INCREMENTAL"), "sane": ("warn", 1, "refresh INCREMENTAL")}
    shown = dt("show", "test-results", "valid_orders", "-p", str(shop), "--format", "json").json()
    assert [(t["name"], t["status"], t["failures"], t["at"], t["by"]) for t in tests["last"]] == \
        [(t["name"], t["status"], t["failures"], t["at"], t["by"]) for t in shown]
    assert tests["last_at"] == max(t["at"] for t in shown if t["at"])
    assert [p["failures"] for p in tests["over_time"]["not_null_valid_orders_order_id"]] == [2, 0, 0]
    # each expectation's rows over the audited refreshes, by what its on_violation did with them
    assert tests["expectations"] == {"positive": {"refreshes": 3, "dropped": 0, "warned": 5, "failed": 0},
                                     "sane": {"refreshes": 3, "dropped": 4, "warned": 0, "failed": 0}}
    page = _parse(shop / "target" / "docs" / "tables" / "valid_orders.html")
    rows = [tag for tag in page.tags if tag[0] == "tr"]
    assert [a["class"] for _, a in rows if "test" in a.get("class", "").split()] == [
        "test status-warn", "test status-none", "test status-pass", "test status-warn"]
    assert len([a for _, a in rows if a.get("class") == "expectation"]) == 2
    text = " ".join(" ".join(page.text).split())
    assert "Expectations over the refresh history" in text and "not run yet" in text and "dt test" in text
    assert _doc(shop)["dynamic_tables"]["customer_rank"]["data_tests"]["last"] == []
    assert 'id="data-tests"' not in (shop / "target" / "docs" / "tables" / "customer_rank.html").read_text()


def test_expectation_counts_name_what_happened_to_the_rows():
    """A `fail` expectation's rows were not committed: counted failed; warn and drop counted as such;
    a DT not defined now (orphaned) shows its last audited refresh's results."""
    from dtcli.api.docs import _test_results
    from dtcli.artifacts.typed_json import to_json
    from dtcli.model import RefreshRecord

    def refresh(end, state, *found):
        return RefreshRecord(name="t", state=state, refresh_action="INCREMENTAL", refresh_trigger="SCHEDULED",
                             data_timestamp=None, refresh_start_time=end, refresh_end_time=end, run_id=end,
                             data_tests=[{"name": n, "kind": "expectation", "test": "expectation", "action": a,
                                          "status": s, "failures": k} for n, a, s, k in found])

    newest_first = [refresh("2026-11-26T10:00:00", "FAILED", ("key", "fail", "fail", 2), ("big", "drop", "pass", 0)),
                    refresh("2026-11-26T09:00:00", "SUCCEEDED", ("key", "fail", "pass", 0), ("big", "drop", "warn", 5)),
                    refresh("2026-11-26T08:00:00", "SUCCEEDED", ("key", "warn", "warn", 7))]   # key was warn then
    found = to_json(_test_results(newest_first, None))
    assert found["expectations"] == {"key": {"refreshes": 3, "dropped": 0, "warned": 7, "failed": 2},
                                     "big": {"refreshes": 2, "dropped": 5, "warned": 0, "failed": 0}}
    assert [(t["name"], t["status"], t["at"], t["by"]) for t in found["last"]] == [
        ("key", "fail", "2026-11-26T10:00:00", "refresh INCREMENTAL"),
        ("big", "pass", "2026-11-26T10:00:00", "refresh INCREMENTAL")]
    assert [p["failures"] for p in found["over_time"]["key"]] == [7, 0, 2]
    assert to_json(_test_results([], None)) == {"last": [], "last_at": None, "over_time": {}, "expectations": {}}
