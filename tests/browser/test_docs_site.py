"""The site of `dt docs generate` as a person sees it: opened from the file system in headless
Chromium (Debian's package, which `make test` installs), with no network. The graph has a node
per source and DT and an edge per dependency, none overlapping another or running off the
canvas; clicking a DT opens its page with its SQL, columns and refresh marks; the search box
filters nodes. Screenshots go to target/docs-browser/ at the repository's root."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.docs_projects import SCRIPT, big_project, shop_project
from tests.helpers import REPO, dt

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# what Chromium needs on a machine without a display or network (`headless=True` adds --headless;
# the persistent context below is a fresh --user-data-dir)
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
SHOTS = REPO / "target" / "docs-browser"


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if not Path(CHROMIUM).is_file():
        pytest.skip("Debian's chromium is not installed: `make test` installs it with apt-get when run as "
                    "root on Debian; elsewhere `apt-get install chromium` and run this again")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("the playwright package is missing: `make setup` installs it with the test extras")
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=CHROMIUM, headless=True,
            args=FLAGS, viewport={"width": 1400, "height": 900})
        yield context
        context.close()


class Watched:
    """A page with every request, page error and dialog it caused noted."""

    def __init__(self, context):
        self.page = context.new_page()
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))

    def open_graph(self, index: Path):
        self.page.goto(index.as_uri())
        self.page.wait_for_selector("svg.graph[data-ready='1']", timeout=30_000)
        return self.page

    def check_offline_and_quiet(self):
        assert [u for u in self.requests if not u.startswith("file://")] == []   # no network at all
        assert self.errors == [] and self.dialogs == []


# Every node box inside the drawing and clear of every other, every label inside its box.
READABLE = """() => {
  const svg = document.querySelector('svg.graph');
  const [,, width, height] = svg.getAttribute('viewBox').split(' ').map(Number);
  const boxes = [...svg.querySelectorAll('.node')].map(n => {
    const [x, y] = n.getAttribute('transform').match(/-?[0-9.]+/g).map(Number);
    const r = n.querySelector('rect.box');
    const w = Number(r.getAttribute('width')), h = Number(r.getAttribute('height'));
    const label = n.querySelector('.label'), sub = n.querySelector('.sub');
    const text = Math.max(Number(label.getAttribute('x')) + label.getComputedTextLength(),
                          Number(sub.getAttribute('x')) + sub.getComputedTextLength());
    return {name: n.dataset.name, x, y, w, h, text};
  });
  const problems = [];
  for (const b of boxes) {
    if (b.x < 0 || b.y < 0 || b.x + b.w > width + 0.5 || b.y + b.h > height + 0.5) problems.push('off the drawing: ' + b.name);
    if (b.text > b.w) problems.push('label wider than its box: ' + b.name);
  }
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const a = boxes[i], b = boxes[j];
    if (a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h) problems.push(a.name + ' overlaps ' + b.name);
  }
  const holder = document.getElementById('graph');
  return {problems, nodes: boxes.length, scrollable: holder.scrollWidth >= Math.floor(width) && holder.scrollHeight >= Math.floor(height)};
}"""


def _graph(page) -> tuple[set[str], set[tuple[str, str]]]:
    nodes = set(page.eval_on_selector_all("svg.graph .node", "els => els.map(e => e.dataset.name)"))
    edges = page.eval_on_selector_all("svg.graph .edge", "els => els.map(e => [e.dataset.from, e.dataset.to])")
    return nodes, {tuple(e) for e in edges}


@pytest.fixture(scope="module")
def shop(tmp_path_factory) -> Path:
    root = shop_project(tmp_path_factory.mktemp("browser") / "shop")
    assert dt("docs", "generate", "-p", str(root)).code == 0
    return root


def test_graph_pages_and_search_of_the_shop(browser, shop):
    site = shop / "target" / "docs"
    doc = json.loads((site / "project.json").read_text())
    watched = Watched(browser)
    page = watched.open_graph(site / "index.html")

    nodes, edges = _graph(page)
    assert nodes == set(doc["dynamic_tables"]) | set(doc["sources"])
    shown = dt("show", "graph", "-p", str(shop), "--format", "json").json()
    assert edges == {tuple(e) for e in shown["edges"]} == {tuple(e) for e in doc["edges"]}
    state = {n: page.get_attribute(f"svg.graph .node[data-name='{n}']", "class") for n in nodes}
    assert "state-FAILED" in state["broken_feed"] and "state-SUSPENDED" in state["paused_feed"]
    assert "state-ORPHANED" in state["lost_table"] and "state-ACTIVE" in state["customer_rank"]
    assert page.locator("svg.graph .node[data-name='valid_orders'] .frozen-band").count() == 1
    assert "CUSTOM" in page.text_content("svg.graph .node[data-name='order_audit'] .sub")
    readable = page.evaluate(READABLE)
    assert readable["problems"] == [] and readable["nodes"] == len(nodes)
    page.screenshot(path=str(SHOTS / "shop-index.png"), full_page=True)

    page.fill("#search", "finance")         # a tag
    assert set(page.eval_on_selector_all("svg.graph .node.match", "els => els.map(e => e.dataset.name)")) == \
        {"customer_revenue", "customer_rank"}
    assert page.locator("svg.graph .node.dim").count() == len(nodes) - 2
    assert page.inner_text("#search-count") == f"2 of {len(nodes)} match"
    page.locator("#graph").screenshot(path=str(SHOTS / "shop-search.png"))
    page.fill("#search", "tag:core")
    assert page.eval_on_selector_all("svg.graph .node.match", "els => els.map(e => e.dataset.name)") == ["valid_orders"]
    page.fill("#search", "")
    assert page.locator("svg.graph .node.dim").count() == 0

    page.click("svg.graph .node[data-name='customer_revenue']")
    page.wait_for_url("**/tables/customer_revenue.html")
    explained = doc["dynamic_tables"]["customer_revenue"]["explain"]
    assert page.inner_text("h1").startswith("customer_revenue")
    assert "JOIN customers AS c" in page.inner_text("#sql pre")
    assert "FROM" in page.inner_text("#compiled-sql pre")
    assert page.locator(".column-name").all_inner_texts() == [c["name"] for c in explained["columns"]]
    history = dt("show", "refresh-history", "customer_revenue", "-p", str(shop), "--format", "json").json()
    assert page.locator("#history .mark").count() == len(history) == 1
    assert "How it refreshes: ADAPTIVE" in page.inner_text("#refresh-mode h2")
    assert page.locator("#refresh-mode .operators tbody td:first-child").all_inner_texts() == \
        [op["operator"] for op in explained["operators"]]           # explain's operator table
    assert SCRIPT in page.inner_text(".comment")                  # the comment, as text
    # column lineage: a curve per input column a column is made of, every label inside its box
    lineage = explained["column_lineage"]
    assert page.locator("svg.column-lineage .cl-edge").count() == sum(len(c["inputs"]) for c in lineage["columns"])
    assert page.evaluate(LINEAGE_INSIDE) == []
    page.screenshot(path=str(SHOTS / "shop-customer_revenue.png"), full_page=True)

    page.goto((site / "tables" / "valid_orders.html").as_uri())
    history = dt("show", "refresh-history", "valid_orders", "-p", str(shop), "--format", "json").json()
    marks = page.eval_on_selector_all("#history .mark", "els => els.map(e => e.dataset.action)")
    assert sorted(marks) == sorted(r["refresh_action"] for r in history) and len(marks) == 5
    assert page.locator("#history .lag-line").count() == 1 and page.locator("#history .target-line").count() == 1
    checks = dt("show", "test-results", "valid_orders", "-p", str(shop), "--format", "json").json()
    assert page.locator("#data-tests tr.test td:first-child").all_inner_texts() == [c["name"] for c in checks]
    assert page.locator("#data-tests tr.test td:nth-child(3)").all_inner_texts() == \
        [c["status"] or "not run" for c in checks]
    assert page.locator("#data-tests table.expectations tr.expectation").count() == 2
    page.screenshot(path=str(SHOTS / "shop-valid_orders.png"), full_page=True)

    page.goto((site / "tables" / "odd_names.html").as_uri())
    assert SCRIPT in page.locator(".column-name").all_inner_texts()   # a column name, as text
    assert page.evaluate("document.scripts.length") == 0
    page.goto((site / "tables" / "broken_feed.html").as_uri())
    assert SCRIPT in page.inner_text("#history table")               # a failure message, as text
    watched.check_offline_and_quiet()


# every text of the column-lineage drawing lies inside one of its boxes (they are sized at
# generate time, without the browser's fonts)
LINEAGE_INSIDE = """() => {
  const boxes = [...document.querySelectorAll('svg.column-lineage rect.cl-box')].map(r => r.getBoundingClientRect());
  return [...document.querySelectorAll('svg.column-lineage text')].map(t => [t.textContent, t.getBoundingClientRect()])
    .filter(([, b]) => !boxes.some(r => b.left >= r.left && b.right <= r.right && b.top >= r.top - 1 && b.bottom <= r.bottom + 1))
    .map(([text]) => text);
}"""


def test_a_graph_of_200_dts_is_readable(browser, tmp_path):
    root, inputs = big_project(tmp_path / "big")
    assert dt("seed", "-p", str(root)).code == 0
    assert dt("docs", "generate", "-p", str(root)).code == 0
    watched = Watched(browser)
    page = watched.open_graph(root / "target" / "docs" / "index.html")
    nodes, edges = _graph(page)
    assert len(nodes) == 206 and edges == {(i, n) for n, ins in inputs.items() for i in ins}
    readable = page.evaluate(READABLE)
    assert readable["problems"] == [] and readable["scrollable"]
    page.screenshot(path=str(SHOTS / "big-index.png"))                 # 1:1, where the lineage starts
    page.fill("#search", "mart_finance")
    matched = page.locator("svg.graph .node.match").count()
    assert matched == sum("mart_finance" in n for n in inputs) > 0
    page.locator("#graph").screenshot(path=str(SHOTS / "big-search.png"))
    page.fill("#search", "")
    page.click("[data-zoom='fit']")
    page.locator("#graph").screenshot(path=str(SHOTS / "big-fit.png"))
    watched.check_offline_and_quiet()
