"""A keyed block restricted to its affected keys: the predicate "among the keys" (a null-safe
EXISTS over the materialised key view, with prunable IN lists in front when the keys are few)
and the block at one version under it."""

from __future__ import annotations

from sqlglot import exp

from dtcli.sql.incremental_rewrite.relations import KeySet, and_, key_column, null_safe_all
from dtcli.sql.incremental_rewrite.shapes import Shape


def restriction(exprs: list[exp.Expression], keys: KeySet) -> exp.Expression:
    """Rows whose key expressions are null-safely among the affected keys."""
    k = exp.to_identifier("__dt_key")
    pairs = [(exp.column(key_column(n), k), e.copy()) for n, e in enumerate(exprs)]
    cond: exp.Expression = exp.Exists(this=exp.select(exp.Literal.number(1))
                                       .from_(exp.Table(this=exp.to_identifier(keys.view),
                                                        alias=exp.TableAlias(this=k)))
                                       .where(null_safe_all(pairs)))
    for pre in prefilters(exprs, keys):
        cond = exp.And(this=exp.Paren(this=pre), expression=cond)
    return cond


def prefilters(exprs: list[exp.Expression], keys: KeySet) -> list[exp.Expression]:
    """Per key expression, a prunable predicate "among this column's keys" (NULL included
    when it is one), when the key set is small enough to be written out."""
    out: list[exp.Expression] = []
    if keys.filters is not None:
        for e, make in zip(exprs, keys.filters):
            pre = make(e.copy()) if make is not None else None
            if pre is not None:
                out.append(pre)
        return out
    for e, lits in zip(exprs, keys.literals or [None] * len(exprs)):
        if lits is None:
            continue
        values = [v for v in lits if not isinstance(v, exp.Null)]
        pre: exp.Expression | None = None
        if values:
            pre = exp.In(this=e.copy(), expressions=[v.copy() for v in values])
        if len(values) != len(lits):
            isnull = exp.Is(this=e.copy(), expression=exp.Null())
            pre = isnull if pre is None else exp.Or(this=pre, expression=isnull)
        out.append(pre if pre is not None else exp.false())
    return out


def restricted(compiler, sel: exp.Select, shape: Shape, keys: KeySet | None, which: str) -> exp.Select:
    """The block at version `which` (new or old), its rows those of the affected `keys` (all of
    them for a scalar aggregate: None); `compiler` is the DeltaCompiler that versions it."""
    out = compiler.version(sel, which)
    out.set("order", None)      # as in the compiler's term(): a union branch, and no LIMIT reaches here
    if keys is None:
        return out
    exprs = keys.pick(shape.keys if shape.keys is not None else shape.join.key)
    where = out.args.get("where")
    out.set("where", exp.Where(this=and_(where.this if where else None,
                                         restriction(exprs, keys))))
    join = shape.join
    if join is not None and shape.keys is None and join.kind in ("LEFT", "SEMI", "ANTI"):
        # only right rows of the affected keys can match a left row of them: said in the
        # join's ON as well, so that the right side's scan is pruned by the keys too (the
        # condition holds for every pair the ON's equalities match)
        on = out.args["joins"][join.index]
        for pre in prefilters([right for _, right in join.pairs], keys):
            on.set("on", and_(on.args.get("on"), pre))
    return out
