"""What the change-query compiler refuses, block by block: each refusal raises `Unsupported`
with the reason explain shows, and the table refreshes FULL (slower, never wrong)."""

from __future__ import annotations

from sqlglot import exp

from dtcli.sql import functions as fn
from dtcli.sql.incremental_rewrite.relations import Bindings, Unsupported, block_items, is_table_ref, scope_nodes


def check_tables(query: exp.Expression, bindings: Bindings) -> None:
    """Every table the query reads is one of its bound inputs."""
    check_subqueries(query)
    for table in query.find_all(exp.Table):
        if not is_table_ref(table):
            continue
        if table.db or table.name.lower() not in bindings.views:
            raise Unsupported(f"the query reads {table.sql(dialect='spark')}, which is not "
                              "one of its inputs")


def check_subqueries(query: exp.Expression) -> None:
    """A subquery expression the rules (sql/rules/subqueries.py) left as written, in any block
    of the query: refused whether or not a term would visit its block (a block recomputed
    whole, e.g. under a global aggregate, never does), as the analyzer refuses it, so that
    explain and the refresh agree. The rules turn every one they can make exact into a join."""
    for sel in query.find_all(exp.Select):
        for node in scope_nodes(sel):
            if isinstance(node, (exp.Query, exp.Subquery)):
                raise Unsupported("a subquery outside FROM cannot be refreshed incrementally")


def no_limit(node: exp.Expression) -> None:
    for arg in ("limit", "offset"):
        if node.args.get(arg):
            raise Unsupported(f"{arg.upper()} cannot be refreshed incrementally")


def check_block(compiler, sel: exp.Select) -> None:
    """The block's FROM items, expressions and LATERAL VIEWs are all ones a change query can be
    written for (`compiler`: the DeltaCompiler, which knows which inputs changed)."""
    for item in block_items(sel):
        _check_item(compiler, item)
    for node in scope_nodes(sel):
        if isinstance(node, (exp.Query, exp.Subquery)):
            raise Unsupported("a subquery outside FROM cannot be refreshed incrementally")
        if fn.is_nondeterministic(node) or fn.is_user_defined(node):
            raise Unsupported("a nondeterministic or user-defined function cannot be "
                              "refreshed incrementally")
    for lat in sel.args.get("laterals") or ():
        if not isinstance(lat.this, exp.Func):
            raise Unsupported("a LATERAL subquery cannot be refreshed incrementally")


def _check_item(compiler, item: exp.Expression) -> None:
    if isinstance(item, exp.Table):
        if item.args.get("sample") or item.args.get("pivots"):
            raise Unsupported("TABLESAMPLE / PIVOT cannot be refreshed incrementally")
        if is_table_ref(item):
            return
        func = item.this
        if compiler.changed(func) or any(isinstance(n, exp.Query) for n in func.walk()):
            raise Unsupported("a table function over a subquery is refreshed FULL")
        return      # range(), explode(t.col) as a lateral item: no input of its own
    if isinstance(item, exp.Subquery):
        if item.args.get("sample") or item.args.get("pivots"):
            raise Unsupported("TABLESAMPLE / PIVOT cannot be refreshed incrementally")
        return
    if isinstance(item, exp.Values):
        return
    raise Unsupported(f"FROM item {item.key.upper()} cannot be refreshed incrementally")
