"""Column lineage: which input columns each output column of a query is made from, and how.

Computed from the query as written, qualified against its inputs (`sql/resolve.py`), not from
the form dt's rules rewrite it into for refreshing: an `IN (SELECT ...)` the rules turn into a
semi-join filters rows, and lineage should say FILTER with the user's own names.

The vocabulary is OpenLineage's column lineage facet (spec 1-2-0): an output column depends on
an input column DIRECTLY (its value is made from it: IDENTITY, TRANSFORMATION, AGGREGATION, with
`masking` when the value cannot be read back, as COUNT or a hash) or INDIRECTLY (it decides the
value without being it: the PARTITION BY / ORDER BY of a window (WINDOW), a CASE condition
(CONDITIONAL)). Columns that decide which rows exist at all — WHERE / HAVING / QUALIFY (FILTER),
JOIN conditions (JOIN), GROUP BY and DISTINCT (GROUP_BY), ORDER BY (SORT), anywhere in the FROM
tree — are the dataset's: they affect every output column alike, so they are listed once
(the facet's `dataset`), not repeated under each column.

sqlglot's own `lineage` module answers "which leaves does this column reach" for one column; it
does not tell a filter from a value or an aggregate from a copy, so the walk here is dt's own,
over sqlglot's scopes. Its answers are checked against sqlglot's where both speak
(tests/unit/test_column_lineage.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import Scope, build_scope

DIRECT, INDIRECT = "DIRECT", "INDIRECT"
IDENTITY, TRANSFORMATION, AGGREGATION = "IDENTITY", "TRANSFORMATION", "AGGREGATION"
FILTER, JOIN, GROUP_BY, SORT, WINDOW, CONDITIONAL = "FILTER", "JOIN", "GROUP_BY", "SORT", "WINDOW", "CONDITIONAL"
_RANK = {IDENTITY: 0, TRANSFORMATION: 1, AGGREGATION: 2}
# functions whose result does not reveal their argument's values (OpenLineage's `masking`)
_MASKING = frozenset({"count", "md5", "sha", "sha1", "sha2", "hash", "xxhash64", "crc32", "mask",
                      "approxdistinct", "approx_count_distinct"})


@dataclass(frozen=True, order=True)
class Field:
    """A column of one of the query's inputs (a source or a DT, by its logical name)."""

    input: str
    column: str


class TransformationDict(TypedDict):
    type: str
    subtype: str
    masking: bool


class FieldDict(TypedDict):
    """An input column an output depends on, and how (explain's JSON)."""

    input: str
    column: str
    transformations: list[TransformationDict]


class OutputDict(TypedDict):
    name: str
    inputs: list[FieldDict]


class ColumnLineageDict(TypedDict):
    """The JSON shape of `dt explain`'s `column_lineage`."""

    columns: list[OutputDict]
    dataset: list[FieldDict]


@dataclass(frozen=True, order=True)
class Transformation:
    type: str               # DIRECT | INDIRECT
    subtype: str            # IDENTITY ... AGGREGATION for DIRECT; FILTER ... CONDITIONAL for INDIRECT
    masking: bool = False

    def to_dict(self) -> TransformationDict:
        return {"type": self.type, "subtype": self.subtype, "masking": self.masking}


Deps = dict[Field, set[Transformation]]


@dataclass
class ColumnLineage:
    """Per output column (in the query's order), the input columns it depends on; and the input
    columns every row depends on (`dataset`)."""

    columns: dict[str, dict[Field, frozenset[Transformation]]] = field(default_factory=dict)
    dataset: dict[Field, frozenset[Transformation]] = field(default_factory=dict)

    def inputs(self) -> set[str]:
        return {f.input for deps in [*self.columns.values(), self.dataset] for f in deps}

    def to_dict(self) -> ColumnLineageDict:
        """The JSON shape of `dt explain`'s `column_lineage` (and of the docs site's)."""
        return {"columns": [{"name": name, "inputs": _fields(deps)} for name, deps in self.columns.items()],
                "dataset": _fields(self.dataset)}


def _fields(deps: dict[Field, frozenset[Transformation]]) -> list[FieldDict]:
    return [{"input": f.input, "column": f.column, "transformations": [t.to_dict() for t in sorted(ts)]}
            for f, ts in sorted(deps.items())]


def column_lineage(qualified: exp.Query, names: list[str] | tuple[str, ...] | None = None) -> ColumnLineage | None:
    """The lineage of a qualified query (every column bound to its input: `sql/resolve.py`);
    `names`: the output columns' names as the DT has them (its `columns:` may rename them), by
    position. None when the query's shape is beyond this walk (its scopes cannot be built)."""
    try:
        root = build_scope(qualified)
    except (SqlglotError, KeyError, ValueError):
        return None
    if root is None:
        return None
    tracer = _Tracer()
    outputs = _named_selects(root)
    names = list(names) if names is not None and len(names) == len(outputs) else outputs
    out = ColumnLineage()
    for index, name in enumerate(names):
        out.columns[name] = _frozen(tracer.output(root, index))
    out.dataset = _frozen(tracer.rows(root))
    return out


def _frozen(deps: Deps) -> dict[Field, frozenset[Transformation]]:
    return {f: frozenset(ts) for f, ts in sorted(deps.items()) if ts}


def _named_selects(scope: Scope) -> list[str]:
    return list(scope.expression.named_selects)


def _merge(into: Deps, more: Deps) -> Deps:
    for f, ts in more.items():
        into.setdefault(f, set()).update(ts)
    return into


def _compose(outer: Transformation, inner: Transformation) -> Transformation:
    """How an input reaches an output through two steps (outer applied to what inner made):
    INDIRECT wins (the outer step's kind when both are), else the stronger DIRECT kind."""
    if outer.type == INDIRECT:
        return outer
    if inner.type == INDIRECT:
        return inner
    subtype = outer.subtype if _RANK[outer.subtype] >= _RANK[inner.subtype] else inner.subtype
    return Transformation(DIRECT, subtype, outer.masking or inner.masking)


def _through(deps: Deps, outer: Transformation) -> Deps:
    return {f: {_compose(outer, t) for t in ts} for f, ts in deps.items()}


def _indirect(deps: Deps, subtype: str) -> Deps:
    return {f: {Transformation(INDIRECT, subtype)} for f in deps}


def _function_name(node: exp.Expression) -> str:
    return node.name.lower() if isinstance(node, exp.Anonymous) else node.key.lower()


class _Tracer:
    """Walks a query's scopes; what each scope's outputs and rows depend on is worked out once."""

    def __init__(self) -> None:
        self._outputs: dict[tuple[int, int], Deps] = {}
        self._rows: dict[int, Deps] = {}

    # -- outputs ------------------------------------------------------------------------------

    def output(self, scope: Scope, index: int) -> Deps:
        key = (id(scope), index)
        if key not in self._outputs:
            self._outputs[key] = {}       # a cycle (it cannot happen in SQL) ends here
            self._outputs[key] = self._output(scope, index)
        return self._outputs[key]

    def _output(self, scope: Scope, index: int) -> Deps:
        node = scope.expression
        if isinstance(node, (exp.Except, exp.Intersect)):   # the values are the left side's; the right filters
            return self.output(scope.set_operation_scopes[0], index)
        if isinstance(node, exp.SetOperation):
            deps: Deps = {}
            for branch in scope.set_operation_scopes:       # a set operation matches columns by position
                _merge(deps, self.output(branch, index))
            return deps
        if isinstance(node, exp.Lateral) or not isinstance(node, exp.Select):
            return {}
        selects = node.selects
        return self.expression(scope, selects[index]) if index < len(selects) else {}

    def named(self, scope: Scope, name: str) -> Deps:
        """What a column read from a derived table / CTE / lateral view by name depends on."""
        node = scope.expression
        if isinstance(node, exp.Lateral):
            return self.lateral(scope)
        names = [n.lower() for n in node.named_selects]
        return self.output(scope, names.index(name.lower())) if name.lower() in names else {}

    def lateral(self, scope: Scope) -> Deps:
        """A LATERAL VIEW's generated column is made from the generator's arguments, which read
        the columns of the scope that holds it."""
        outer = scope.parent or scope
        return _through(self.expression(outer, scope.expression.this),
                        Transformation(DIRECT, TRANSFORMATION))

    def column(self, scope: Scope, column: exp.Column) -> Deps:
        source = scope.sources.get(column.table)
        if isinstance(source, exp.Table):
            return {Field(source.name.lower(), column.name.lower()): {Transformation(DIRECT, IDENTITY)}}
        if isinstance(source, Scope):
            return self.named(source, column.name)
        if not column.table and isinstance(scope.expression, exp.Select):   # ORDER BY an output's alias
            names = [n.lower() for n in scope.expression.named_selects]
            if column.name.lower() in names:
                return self.output(scope, names.index(column.name.lower()))
        if scope.parent is not None and not source:   # a correlated column: the outer scope's
            return self.column(scope.parent, column)
        return {}

    def expression(self, scope: Scope, node: exp.Expression) -> Deps:
        """What a value expression of `scope` (a select item, a condition) depends on, each
        column by where it sits in the expression."""
        deps: Deps = {}
        children = {id(s.expression): s for s in scope.subquery_scopes}
        stack: list[tuple[exp.Expression, tuple[exp.Expression, ...]]] = [(node, ())]
        while stack:
            current, path = stack.pop()
            child = children.get(id(current))
            if child is not None:
                _merge(deps, self.subquery(child, (*path, current)))
                continue
            if isinstance(current, exp.Column) and not isinstance(current.this, exp.Star):
                _merge(deps, _through(self.column(scope, current), _kind((*path, current))))
                continue
            for inner in current.iter_expressions():
                stack.append((inner, (*path, current)))
        return deps

    def subquery(self, child: Scope, path: tuple[exp.Expression, ...]) -> Deps:
        """A subquery in an expression: its value (a scalar subquery's single column, or the
        values IN compares with) where it sits; the columns deciding its rows (its filters,
        joins, correlation) decide that value, so they are indirect to it."""
        kind = _kind(path)
        deps = _through(self.output(child, 0), kind) if not any(isinstance(p, exp.Exists) for p in path) else {}
        behind = self.rows(child)
        for column in child.external_columns:
            _merge(behind, _indirect(self.column(child, column), FILTER))
        if kind.type == INDIRECT:
            behind = _indirect(behind, kind.subtype)
        return _merge(deps, behind)

    # -- rows ---------------------------------------------------------------------------------

    def rows(self, scope: Scope) -> Deps:
        """The input columns that decide which rows a scope yields (all INDIRECT)."""
        if id(scope) not in self._rows:
            self._rows[id(scope)] = {}
            self._rows[id(scope)] = self._scope_rows(scope)
        return self._rows[id(scope)]

    def _scope_rows(self, scope: Scope) -> Deps:
        node = scope.expression
        deps: Deps = {}
        if isinstance(node, exp.SetOperation):
            for branch in scope.set_operation_scopes:
                _merge(deps, self.rows(branch))
            if isinstance(node, (exp.Except, exp.Intersect)):   # which left rows stay: the right side's values
                right = scope.set_operation_scopes[1]
                for index in range(len(right.expression.named_selects)):
                    _merge(deps, _indirect(self.output(right, index), FILTER))
            if node.args.get("distinct"):
                for index in range(len(node.named_selects)):
                    _merge(deps, _indirect(self.output(scope, index), GROUP_BY))
            return deps
        if not isinstance(node, exp.Select):
            return deps
        for source in scope.selected_sources.values():
            inner = source[1]
            if isinstance(inner, Scope) and not isinstance(inner.expression, exp.Lateral):
                _merge(deps, self.rows(inner))
        for key, subtype in (("where", FILTER), ("having", FILTER), ("qualify", FILTER)):
            clause = node.args.get(key)
            if clause is not None:
                _merge(deps, _indirect(self.expression(scope, clause.this), subtype))
        for join in node.args.get("joins") or ():
            if join.args.get("on") is not None:
                _merge(deps, _indirect(self.expression(scope, join.args["on"]), JOIN))
            for name in join.args.get("using") or ():
                for alias in scope.selected_sources:
                    _merge(deps, _indirect(self.column(scope, exp.column(name.name, alias)), JOIN))
        group = node.args.get("group")
        if group is not None:
            for item in group.expressions:
                _merge(deps, _indirect(self.expression(scope, item), GROUP_BY))
        if node.args.get("distinct"):
            for item in node.selects:
                _merge(deps, _indirect(self.expression(scope, item), GROUP_BY))
        order = node.args.get("order")
        if order is not None:
            for item in order.expressions:
                _merge(deps, _indirect(self.expression(scope, item), SORT))
        return deps


def _kind(path: tuple[exp.Expression, ...]) -> Transformation:
    """How the node at the end of `path` (from the select item down to it) reaches the item's
    value."""
    subtype, masking = IDENTITY, False
    for k, node in enumerate(path[:-1]):
        below = path[k + 1]
        if isinstance(node, exp.Window) and below is not None and below is not node.this:
            return Transformation(INDIRECT, WINDOW)        # PARTITION BY / ORDER BY of a window
        if isinstance(node, (exp.If, exp.Case)) and below is node.args.get("this"):
            return Transformation(INDIRECT, CONDITIONAL)   # a CASE WHEN / IF condition, CASE x WHEN
        if isinstance(node, exp.Filter) and below is node.expression:
            return Transformation(INDIRECT, FILTER)        # an aggregate's FILTER (WHERE ...)
        if isinstance(node, (exp.Alias, exp.Paren, exp.Ordered, exp.Subquery)):
            continue
        if isinstance(node, exp.AggFunc):
            subtype = AGGREGATION
        elif subtype == IDENTITY:
            subtype = TRANSFORMATION
        if isinstance(node, exp.Func) and _function_name(node) in _MASKING:
            masking = True
    return Transformation(DIRECT, subtype, masking)
