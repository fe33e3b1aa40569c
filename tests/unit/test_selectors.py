"""dbt-style selectors for `dt run --select` (no JVM)."""

from __future__ import annotations

import pytest

from dtcli.errors import UsageError
from dtcli.planning.graph import Graph
from dtcli.planning.selectors import select
from tests.sched_helpers import chain_project


@pytest.fixture
def project(tmp_path):
    # src -> a -> b -> c ; src -> d (tagged)
    return chain_project(tmp_path, {"a": "1 hour", "b": "1 hour", "c": "1 hour", "d": "1 hour"},
                         {"a": "src", "b": "a", "c": "b", "d": "src"},
                         extra_yml={"d": "tags: [daily, finance]\n", "b": "tags: daily\n"})


@pytest.mark.parametrize("selectors, expected", [
    (None, {"a", "b", "c", "d"}),
    (["b"], {"b"}),
    (["+b"], {"a", "b"}),
    (["b+"], {"b", "c"}),
    (["+b+"], {"a", "b", "c"}),
    (["tag:daily"], {"b", "d"}),
    (["tag:daily+"], {"b", "c", "d"}),
    (["a", "d"], {"a", "d"}),
    (["a d"], {"a", "d"}),                 # space-separated: union
    (["tag:daily,+c"], {"b"}),             # comma: intersection
    (["B"], {"b"}),
    (["[ab]"], {"a", "b"}),
])
def test_selectors(project, selectors, expected):
    assert select(project, Graph.of(project), selectors) == expected


@pytest.mark.parametrize("selector, message, hint", [
    ("bb", "no dynamic table named 'bb'", "did you mean b?"),
    ("tag:dayly", "no dynamic table has tag 'dayly'", "did you mean daily?"),
    ("+", "empty selector", None),
    ("x*", "no dynamic table matches 'x*'", None),
])
def test_bad_selectors_are_usage_errors(project, selector, message, hint):
    with pytest.raises(UsageError) as err:
        select(project, Graph.of(project), [selector])
    assert message in str(err.value) and (hint is None or hint in str(err.value))
    assert err.value.exit_code == 2


def test_folder_tags_and_paths_select_tables_by_folder(tmp_path):
    from tests.helpers import write_project

    root = write_project(tmp_path, {"top": "SELECT x FROM src"},
                         config="sources:\n  src: {path: data/src}\nfolders:\n  staging: {tags: [staging]}\n")
    for folder, name in (("staging", "stg_a"), ("staging/deep", "stg_b"), ("marts", "mart")):
        (root / "tables" / folder).mkdir(parents=True, exist_ok=True)
        (root / "tables" / folder / f"{name}.sql").write_text("SELECT x FROM src\n")
    from dtcli.project import load_project

    project = load_project(root)
    graph = Graph.of(project)
    assert select(project, graph, ["tag:staging"]) == {"stg_a", "stg_b"}
    assert select(project, graph, ["path:tables/staging"]) == {"stg_a", "stg_b"}
    assert select(project, graph, ["path:staging/deep"]) == {"stg_b"}
    assert select(project, graph, ["path:tables/marts/mart.sql"]) == {"mart"}
    with pytest.raises(UsageError, match="no dynamic table is defined under 'nowhere'"):
        select(project, graph, ["path:nowhere"])
