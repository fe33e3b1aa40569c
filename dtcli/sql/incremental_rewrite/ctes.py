"""CTE inlining: every reference to a CTE becomes its own occurrence of the CTE's body, so the
delta rule replaces each occurrence on its own (self-joins through a CTE stay exact)."""

from __future__ import annotations

from sqlglot import exp

from dtcli.sql.incremental_rewrite.relations import Unsupported, is_table_ref


def inline_ctes(query: exp.Expression) -> exp.Expression:
    """Replace every CTE reference by the CTE's body, so each reference is its own occurrence."""
    return _inline(query.copy(), {})


def _inline(node: exp.Expression, env: dict[str, tuple[exp.Expression, exp.TableAlias | None]]):
    with_ = node.args.get("with_") or node.args.get("with")
    if with_ is not None:
        if with_.args.get("recursive"):
            raise Unsupported("WITH RECURSIVE cannot be refreshed incrementally")
        env = dict(env)
        for cte in with_.expressions:
            body = _inline(cte.this.copy(), env)
            env[cte.alias_or_name.lower()] = (body, cte.args.get("alias"))
        node.set("with_" if "with_" in node.args else "with", None)
    for key, value in list(node.args.items()):
        if isinstance(value, exp.Expression):
            new = _inline_child(value, env)
            if new is not value:
                node.set(key, new)
        elif isinstance(value, list):
            node.set(key, [_inline_child(v, env) if isinstance(v, exp.Expression) else v
                           for v in value])
    return node


def _inline_child(child: exp.Expression, env):
    if isinstance(child, exp.Table) and is_table_ref(child) and not child.db \
            and child.name.lower() in env:
        body, cte_alias = env[child.name.lower()]
        alias_name = child.alias or child.name
        columns = [c.copy() for c in (cte_alias.columns if cte_alias else [])]
        ref_alias = child.args.get("alias")
        if ref_alias is not None and ref_alias.columns:
            columns = [c.copy() for c in ref_alias.columns]
        alias = exp.TableAlias(this=exp.to_identifier(alias_name), columns=columns or None)
        return exp.Subquery(this=body.copy(), alias=alias)
    return _inline(child, env)
